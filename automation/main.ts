// Entry point of `npm run platform -- <command> <env>`: wires the CLI to the real process, the real
// Pulumi CLI (through the Automation API) and the terminal.
// First: on a too old Node.js this prints one line and exits before anything else loads.
import "./nodeVersion";
import * as os from "node:os";
import * as path from "node:path";
import { runCli } from "./cli";
import type { CliContext } from "./context";
import { ExitCode } from "./errors";
import { processIsAlive } from "./lock";
import { localWorkspaceFactory } from "./workspace";

/** The repository root: this file lives in `<root>/automation/`. */
export const REPO_ROOT = path.resolve(__dirname, "..");

/**
 * Stopping a run without corrupting its state: the engine must be asked once to cancel (it then
 * finishes the operations under way); a second request makes it stop at once. Ctrl-C in a terminal
 * reaches the Pulumi CLI directly (same process group), so SIGINT is not forwarded, only noted;
 * SIGTERM (a CI runner, `kill`) reaches this process alone and is forwarded through the abort
 * signal. A second signal of either kind exits at once; the CLI's lock is released on exit.
 */
function cancellation(): { signal: AbortSignal; requested: () => boolean } {
  const controller = new AbortController();
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`\n${signal} again: stopping now\n`);
      process.exit(ExitCode.interrupted);
    }
    stopping = true;
    process.stderr.write(
      `\n${signal}: the engine is cancelling (it finishes the operations under way); send it again to stop at once\n`,
    );
    if (signal === "SIGTERM") controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return { signal: controller.signal, requested: () => stopping };
}

function systemContext(signal: AbortSignal): CliContext {
  return {
    repoRoot: REPO_ROOT,
    // `npm run` starts scripts in the package folder; INIT_CWD is where the operator typed it.
    cwd: process.env.INIT_CWD ?? process.cwd(),
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    clock: Date.now,
    workspaces: localWorkspaceFactory(),
    host: {
      pid: process.pid,
      hostname: os.hostname(),
      isAlive: processIsAlive,
    },
    signal,
    startTicker: (tick) => {
      const timer = setInterval(tick, 250);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

const cancel = cancellation();
runCli(process.argv.slice(2), systemContext(cancel.signal)).then(
  (code) => {
    // A run the operator stopped reports that, not the engine's failure to finish it.
    process.exitCode = code !== ExitCode.ok && cancel.requested() ? ExitCode.interrupted : code;
  },
  (error: unknown) => {
    // runCli reports every error itself; reaching this is a bug in the CLI.
    process.stderr.write(`platform: internal error: ${String(error)}\n`);
    process.exitCode = ExitCode.failed;
  },
);
