// Entry point of the CLI (`./bin/platform <command> <env>`, or `npm run platform -- …`, which execs
// it): wires the CLI to the real process, the real Pulumi CLI (through the Automation API) and the
// terminal. Loads only what every command needs; the rest comes with the command that needs it.
// (bin/platform has checked the Node.js version before anything loads.)
import * as os from "node:os";
import { REPO_ROOT } from "../components/repo/root";
import { stopChildGroups } from "./childGroups";
import type { CliContext } from "./context";
import { withholdShellCredentials } from "./credentials";
import { rememberDescendants, stopDescendants } from "./descendants";
import { ExitCode, reportError } from "./errors";
import { Interrupts, signalFromTerminal } from "./interrupts";
import { processIsAlive } from "./processes";
import { type RunTemp, currentUser, openRunTemp } from "./runTemp";
import type { WorkspaceFactory } from "./workspace";

/**
 * The Automation API factory, loaded when a command first asks for the Pulumi CLI or a stack: the
 * API takes about a second to load, which `--help`, usage errors and the offline commands never pay.
 */
function lazyWorkspaces(): WorkspaceFactory {
  let factory: Promise<WorkspaceFactory> | undefined;
  const load = () =>
    (factory ??= import("./workspace").then((workspace) => workspace.localWorkspaceFactory()));
  return {
    ensureCli: async (options) => (await load()).ensureCli(options),
    openStack: async (request) => (await load()).openStack(request),
  };
}

function systemContext(interrupts: Interrupts): CliContext {
  return {
    repoRoot: REPO_ROOT,
    // `npm run` starts scripts in the package folder; INIT_CWD is where the operator typed it.
    cwd: process.env.INIT_CWD ?? process.cwd(),
    // The CLI reads the operator's credential variables from this copy; nothing it starts (the
    // Pulumi CLI and its plugins, talosctl, kubectl) inherits them (automation/credentials.ts).
    env: withholdShellCredentials(process.env),
    stdout: process.stdout,
    stderr: process.stderr,
    clock: Date.now,
    workspaces: lazyWorkspaces(),
    host: {
      pid: process.pid,
      hostname: os.hostname(),
      isAlive: processIsAlive,
    },
    signal: interrupts.engineCancel,
    interrupts,
    startTicker: (tick) => {
      const timer = setInterval(tick, 250);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

// The run's private temp folder (automation/runTemp.ts): TMPDIR points there for this process (the
// Automation API's own temp files, os.tmpdir()) and everything it starts (the Pulumi CLI, its
// plugins, talosctl, kubectl). Removed on exit; a SIGKILLed run's folder goes at the next start.
let runTemp: RunTemp;
try {
  runTemp = openRunTemp({
    base: os.tmpdir(),
    user: currentUser(),
    pid: process.pid,
    host: os.hostname(),
    isAlive: processIsAlive,
  });
} catch (error) {
  process.exit(reportError(error, process.stderr));
}
process.env.TMPDIR = runTemp.dir;
process.on("exit", () => runTemp.remove());

// Stopping without corrupting anything (automation/interrupts.ts): the first SIGINT or SIGTERM lets
// the step under way finish (the engine is asked once to cancel); a second one stops at once. The
// CLI's lock files are released on exit either way. Stopping at once also stops every process the
// run started (automation/descendants.ts: the engine's plugins sit in process groups of their own).
const interrupts = new Interrupts({
  now: Date.now,
  fromTerminal: signalFromTerminal,
  write: (text) => process.stderr.write(text),
  stopChildren: () => {
    stopChildGroups();
    stopDescendants();
  },
  exit: (code) => process.exit(code),
});
const onSignal = (signal: "SIGINT" | "SIGTERM") => {
  if (!interrupts.requested) rememberDescendants();
  interrupts.receive(signal);
};
process.on("SIGINT", () => onSignal("SIGINT"));
process.on("SIGTERM", () => onSignal("SIGTERM"));

const ctx = systemContext(interrupts);
const run = import("./cli").then(({ runCli }) => runCli(process.argv.slice(2), ctx));
run.then(
  (code) => {
    // A run the operator stopped reports that, not the engine's failure to finish it.
    process.exitCode = code !== ExitCode.ok && interrupts.requested ? ExitCode.interrupted : code;
  },
  (error: unknown) => {
    // runCli reports every error itself; reaching this is a bug in the CLI.
    process.stderr.write(`platform: internal error: ${String(error)}\n`);
    process.exitCode = ExitCode.failed;
  },
);
