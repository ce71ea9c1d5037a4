// The outside world of the day-two commands beyond CliContext: the Talos client factory, a clock
// that can wait, and the operator's confirmation. Tests attach fakes as `dayTwo` on the context;
// production builds the real ones.
import * as readline from "node:readline/promises";
import type { CliContext } from "../context";
import { ExitCode, UserError } from "../errors";
import { type DayTwoClock, systemClock } from "./clock";
import { type PeerCertificateReader, readPeerCertificate } from "./peerCertificate";
import type { TalosClientFactory } from "./talosClient";
import { TalosctlClient } from "./talosctl";
import type { CommandRunner } from "./toolRunner";

/** Asks the operator a yes/no question; resolves to their answer. */
type Confirm = (question: string) => Promise<boolean>;

/** The day-two commands' dependencies. */
export interface DayTwoDeps {
  readonly talos: TalosClientFactory;
  readonly clock: DayTwoClock;
  readonly confirm: Confirm;
  /** Where the temporary talosconfig folder is created (the OS temp folder by default). */
  readonly tmpDir?: string;
  /** Runs kubectl (tests: a fake that answers from the fake cluster). @default spawns it */
  readonly kubectl?: CommandRunner;
  /** Reads the certificate a node's Talos API presents (`certs`, `health`). @default a TLS handshake */
  readonly peerCertificate: PeerCertificateReader;
}

/** A CliContext that may carry fakes for the day-two commands (tests). */
export interface DayTwoContext extends CliContext {
  readonly dayTwo?: Partial<DayTwoDeps>;
}

/** Indents talosctl's progress (on the context's stderr) so it reads as part of the step that runs it. */
export function progressSink(ctx: CliContext): (text: string) => void {
  let atLineStart = true;
  return (text) => {
    let out = "";
    for (const char of text) {
      if (atLineStart) out += "    | ";
      out += char;
      atLineStart = char === "\n";
    }
    ctx.stderr.write(out);
  };
}

/**
 * Asks on the terminal. Without one (CI, a pipe) there is nobody to ask: the command is refused
 * with a pointer to --yes rather than taken as a yes.
 */
function terminalConfirm(): Confirm {
  return async (question) => {
    if (process.stdin.isTTY !== true) {
      throw new UserError(
        {
          what: "confirmation",
          problem: "needs a terminal to ask",
          got: JSON.stringify(question),
          fix: "Run it in a terminal, or pass --yes to confirm in advance",
        },
        ExitCode.refused,
      );
    }
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
    try {
      const answer = await rl.question(`${question} [y/N] `);
      return /^y(es)?$/i.test(answer.trim());
    } finally {
      rl.close();
    }
  };
}

/** The dependencies of a run: the context's fakes, else the real ones. */
export function dayTwoDeps(ctx: CliContext): DayTwoDeps {
  const given = (ctx as DayTwoContext).dayTwo ?? {};
  const binary = ctx.env.TALOSCTL;
  return {
    talos:
      given.talos ??
      ((connection) =>
        new TalosctlClient({
          connection,
          ...(binary ? { binary } : {}),
          progress: progressSink(ctx),
        })),
    clock: given.clock ?? systemClock,
    confirm: given.confirm ?? terminalConfirm(),
    ...(given.tmpDir ? { tmpDir: given.tmpDir } : {}),
    ...(given.kubectl ? { kubectl: given.kubectl } : {}),
    peerCertificate: given.peerCertificate ?? readPeerCertificate,
  };
}
