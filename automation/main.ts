// Entry point of `npm run platform -- <command> <env>`: wires the CLI to the real process, the real
// Pulumi CLI (through the Automation API) and the terminal.
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
 * Ctrl-C (or SIGTERM) asks the engine to cancel gracefully, which leaves the state consistent; a
 * second one stops at once (the CLI's lock is released on exit either way).
 */
function cancellation(): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      process.stderr.write(`\n${signal} again: stopping now\n`);
      process.exit(ExitCode.interrupted);
    }
    process.stderr.write(
      `\n${signal}: asking the engine to cancel (it finishes the operations under way); press Ctrl-C again to stop at once\n`,
    );
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return controller.signal;
}

function systemContext(): CliContext {
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
    signal: cancellation(),
    startTicker: (tick) => {
      const timer = setInterval(tick, 250);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

runCli(process.argv.slice(2), systemContext()).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // runCli reports every error itself; reaching this is a bug in the CLI.
    process.stderr.write(`platform: internal error: ${String(error)}\n`);
    process.exitCode = ExitCode.failed;
  },
);
