// Whether a usable Pulumi CLI is on this machine, found without the Automation API (which takes
// half a second to load): `validate` and `init` report it next to every other problem. The rules
// are the Automation API's own (PulumiCommand.get): `pulumi` on PATH, else the one `--install-cli`
// installed under ~/.pulumi/versions/<sdk version>; major version 3, at least its minimum version.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { version as sdkVersion } from "@pulumi/pulumi/version";
// semver's parts one by one: its index loads every module of the package (validate starts fast).
import SemVer from "semver/classes/semver";
import semverLt from "semver/functions/lt";
import semverParse from "semver/functions/parse";
import { withoutShellCredentials } from "./credentials";
import type { Env } from "./env";

/** Where to get the Pulumi CLI. */
export const PULUMI_INSTALL_URL = "https://www.pulumi.com/docs/install/";

/** The version of the @pulumi/pulumi SDK, which `--install-cli` installs the CLI of. */
export const PULUMI_SDK_VERSION = sdkVersion;

/**
 * The folder `--install-cli` installs into, under the user's home: Pulumi's own per-version folder,
 * so an installation made by the Automation API elsewhere is reused.
 */
export function cliInstallRoot(
  homeDir: string = os.homedir(),
  version = PULUMI_SDK_VERSION,
): string {
  return path.join(homeDir, ".pulumi", "versions", version);
}

/**
 * The oldest CLI the Automation API accepts (its internal `automation/minimumVersion`, which has no
 * public type; a test keeps the two equal).
 */
export const PULUMI_CLI_MINIMUM = new SemVer("3.2.0-alpha");

/**
 * The oldest CLI that runs the programs: the `replaceWith` resource option (engine 3.207.0), which
 * pushes a node's config again when its machine is replaced (components/talosCluster.ts); with an
 * older CLI the SDK stops the program with "The Pulumi CLI does not support the ReplaceWith
 * option". Resource hooks (3.182.0), which carry the bootstrap guard, are older. It is also newer
 * than 3.205.0, the last CLI to which the Automation API hands its events through a file under
 * TMPDIR (every event, secrets in plain text among them, left behind by a killed run); newer ones
 * stream them over loopback gRPC (automation/stack.js, setupEventLog). Checked up front
 * (here and in PulumiCommand.get), so an old CLI is one message before anything runs.
 */
export const PROGRAM_CLI_MINIMUM = new SemVer("3.207.0");
/** What the programs need of that CLI, for the message that names the minimum. */
const minimumReason = "replaceWith and resource hooks";
const minimumVersion = PROGRAM_CLI_MINIMUM;

/** What the probe found. */
export type CliProbe =
  | { readonly ok: true; readonly command: string; readonly version: string }
  | { readonly ok: false; readonly problem: string; readonly fix: string };

/** The first executable `name` in the PATH folders. */
function onPath(name: string, pathVariable: string | undefined): string | undefined {
  for (const dir of (pathVariable ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Runs `<command> version` and checks what it prints against the SDK's requirements. */
function check(command: string, env: Env): CliProbe {
  const result = spawnSync(command, ["version"], {
    env: { ...withoutShellCredentials(env), PULUMI_SKIP_UPDATE_CHECK: "true" },
    encoding: "utf8",
    timeout: 15_000,
  });
  const printed = (result.stdout ?? "").trim();
  const version = semverParse(printed);
  const upgrade = `Upgrade it (${PULUMI_INSTALL_URL}), or run preview/up with --install-cli`;
  if (result.status !== 0 || version === null) {
    return {
      ok: false,
      problem: `${command} does not run: \`${path.basename(command)} version\` printed ${JSON.stringify(printed || (result.stderr ?? "").trim() || String(result.error ?? ""))}`,
      fix: upgrade,
    };
  }
  if (version.major !== minimumVersion.major || semverLt(version, minimumVersion)) {
    return {
      ok: false,
      problem: `${command} is version ${version.version}; the programs need ${minimumVersion.major}.x, at least ${minimumVersion.version} (${minimumReason})`,
      fix: upgrade,
    };
  }
  return { ok: true, command, version: version.version };
}

/** Looks for the Pulumi CLI as the Automation API would, without loading it. */
export function probePulumiCli(env: Env, homeDir: string = env.HOME ?? os.homedir()): CliProbe {
  const found = onPath("pulumi", env.PATH);
  if (found) return check(found, env);
  const root = cliInstallRoot(homeDir);
  const installed = path.join(root, "bin", "pulumi");
  if (fs.existsSync(installed)) return check(installed, env);
  return {
    ok: false,
    problem: `not found on PATH nor in ${root}`,
    fix: `Install it (${PULUMI_INSTALL_URL}), or run preview/up with --install-cli to install Pulumi ${PULUMI_SDK_VERSION} into ${root}`,
  };
}
