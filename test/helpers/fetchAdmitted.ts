/**
 * A fetch for the OpenAI SDK that sends a request again while the server refuses it with 429, after the Retry-After
 * it names: its admission holding the requests that run at once to what lately made their first packets in time
 * (src/server/admission/RunningLimit.ts), which on a loaded machine may be fewer than a test sends at once. That is
 * what a client with the SDK's retries on does with a 429; any other status (a 5xx too) goes straight to the test.
 */
export function fetchAdmitted(tries = 5): typeof fetch {
  return async (input, init) => {
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(input, init);
      if (res.status !== 429 || attempt >= tries) return res;
      const seconds = Number(res.headers.get('retry-after') ?? 1);
      await res.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, Math.min(10, Math.max(0, seconds)) * 1000));
    }
  };
}
