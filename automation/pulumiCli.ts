// Finding the Pulumi CLI up front, so a missing one is one clear message (what to install, or
// --install-cli) before anything is written, never an Automation API stack trace halfway through.
import type SemVer from "semver/classes/semver";
import {
  PROGRAM_CLI_MINIMUM,
  PULUMI_INSTALL_URL,
  PULUMI_SDK_VERSION,
  cliInstallRoot,
} from "./cliProbe";
import { ExitCode, UserError, commandStderr, firstLines, isSpawnNotFound } from "./errors";

export { PULUMI_INSTALL_URL, PULUMI_SDK_VERSION, cliInstallRoot };

/** How the CLI is looked up and installed: `PulumiCommand.get` / `.install`, or fakes in tests. */
export interface PulumiCommandSource<T> {
  /** `version`: the oldest acceptable CLI (PulumiCommand.get takes the later of it and its own). */
  get(options: { root?: string; version: SemVer }): Promise<T>;
  install(options: { root: string }): Promise<T>;
}

/**
 * The Pulumi CLI: the one on PATH, else the one `--install-cli` installed before, else (with
 * `install`) a fresh installation of the SDK's version into {@link cliInstallRoot}.
 */
export async function resolvePulumiCommand<T>(options: {
  readonly source: PulumiCommandSource<T>;
  readonly install: boolean;
  readonly homeDir?: string;
}): Promise<T> {
  const root = cliInstallRoot(options.homeDir);
  let onPath: unknown;
  try {
    return await options.source.get({ version: PROGRAM_CLI_MINIMUM });
  } catch (error) {
    onPath = error;
  }
  try {
    return await options.source.get({ root, version: PROGRAM_CLI_MINIMUM });
  } catch (error) {
    if (!isSpawnNotFound(error)) throw cliProblem(error, root);
  }
  // Neither works: install if asked (also the way past a too old CLI on PATH), else say why.
  if (!options.install) {
    throw isSpawnNotFound(onPath) ? missingCliError(root, onPath) : cliProblem(onPath, root);
  }
  try {
    return await options.source.install({ root });
  } catch (error) {
    throw new UserError(
      {
        what: "Pulumi CLI",
        problem: `could not be installed into ${root}`,
        got: JSON.stringify(firstLines(commandStderr(error), 2)),
        fix: `Install it yourself (${PULUMI_INSTALL_URL}) and rerun`,
      },
      ExitCode.missingCli,
    );
  }
}

/** The message for a machine without the Pulumi CLI. */
export function missingCliError(root: string, cause: unknown): UserError {
  const got = /spawn \S+ ENOENT/.exec(cause instanceof Error ? cause.message : String(cause));
  return new UserError(
    {
      what: "Pulumi CLI",
      problem: `not found on PATH nor in ${root}`,
      got: JSON.stringify(got ? got[0] : "no pulumi"),
      fix:
        `Install it (${PULUMI_INSTALL_URL}), or rerun with --install-cli to install ` +
        `Pulumi ${PULUMI_SDK_VERSION} into ${root}`,
    },
    ExitCode.missingCli,
  );
}

/** A CLI that exists but cannot be used (too old, unparsable version). */
function cliProblem(error: unknown, root: string): UserError {
  const message = error instanceof Error ? error.message : String(error);
  return new UserError(
    {
      what: "Pulumi CLI",
      problem: `cannot be used with @pulumi/pulumi ${PULUMI_SDK_VERSION}`,
      got: JSON.stringify(firstLines(commandStderr(message), 2)),
      fix: `Upgrade it (${PULUMI_INSTALL_URL}), or rerun with --install-cli to install Pulumi ${PULUMI_SDK_VERSION} into ${root}`,
    },
    ExitCode.missingCli,
  );
}
