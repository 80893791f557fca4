/**
 * A one-line progress bar on stderr (stdout carries the tables). On a terminal it redraws in place; into a file
 * or a pipe it writes one line per run when the run ends, so logs stay readable.
 */
export class ProgressBar {
  #done = 0;
  #failed = 0;
  readonly #startedMs = performance.now();
  readonly #tty: boolean;

  constructor(
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly label: string,
    private readonly total: number,
  ) {
    this.#tty = out.isTTY === true;
    if (this.#tty) this.#draw();
  }

  tick(ok: boolean): void {
    this.#done++;
    if (!ok) this.#failed++;
    if (this.#tty) this.#draw();
  }

  finish(): void {
    if (this.#tty) this.#draw();
    this.out.write(this.#tty ? '\n' : `${this.#line()}\n`);
  }

  #line(): string {
    const width = 30;
    const filled = this.total === 0 ? width : Math.round((this.#done / this.total) * width);
    const seconds = ((performance.now() - this.#startedMs) / 1000).toFixed(1);
    const failed = this.#failed > 0 ? `, ${this.#failed} failed` : '';
    return (
      `${this.label.padEnd(16)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ` +
      `${this.#done}/${this.total} ${seconds} s${failed}`
    );
  }

  #draw(): void {
    this.out.write(`\r${this.#line()}`);
  }
}
