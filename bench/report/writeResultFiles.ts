/** Where every bench run's files go: DIR/results.json, DIR/results.md and any more JSON files, by name. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes the result (indented) to DIR/results.json, the Markdown report to DIR/results.md and each entry of `more`
 * (compact: every request or turn of a run) to DIR/NAME.json; returns the paths by the same names.
 */
export async function writeResultFiles<K extends string = never>(
  dir: string,
  result: object,
  markdown: string,
  more: Readonly<Record<K, unknown>> = {} as Record<K, unknown>,
): Promise<{ json: string; markdown: string } & Record<K, string>> {
  await mkdir(dir, { recursive: true });
  const files: Record<string, string> = {
    json: path.join(dir, 'results.json'),
    markdown: path.join(dir, 'results.md'),
  };
  const writes = [writeFile(files.json, `${JSON.stringify(result, null, 2)}\n`), writeFile(files.markdown, markdown)];
  for (const [name, value] of Object.entries(more)) {
    files[name] = path.join(dir, `${name}.json`);
    writes.push(writeFile(files[name], `${JSON.stringify(value)}\n`));
  }
  await Promise.all(writes);
  return files as { json: string; markdown: string } & Record<K, string>;
}
