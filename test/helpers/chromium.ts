/** Debian's Chromium, headless, as every browser test drives it (playwright-core cannot download a browser here). */
import { chromium, type Browser } from 'playwright-core';

/** `extraArgs`: a test's own flags (a fake microphone, ...). Audio plays without a user gesture. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--autoplay-policy=no-user-gesture-required',
      ...extraArgs,
    ],
  });
}
