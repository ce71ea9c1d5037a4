// The readiness report: everything that stands between a stack and its preview, found without the
// engine and reported at once: the stack file's config problems (the layer's own validation, the
// same the program runs), the credentials the program needs and where each was looked for, the state
// backend's passphrase, and the Pulumi CLI. `validate` prints it; `preview`, `up` and `init` print
// the same report when anything is missing. No Pulumi SDK loads here, so `validate` starts fast.
import * as fs from "node:fs";
import * as path from "node:path";
import { chooseBackend, chooseSecretsProvider, preparePassphrase } from "./backend";
import type { Env } from "./env";
import type { SecretsByKey } from "./bitwarden";
import type { CliProbe } from "./cliProbe";
import { validateAppConfig } from "../components/config/app";
import { validateBootstrapConfig } from "../components/config/bootstrap";
import { checkPlatformConfig } from "../components/config/validate";
import {
  type Credential,
  type ResolvedCredentials,
  credentialPlaces,
  findCredentials,
} from "./credentials";
import { ExitCode, type ExitCodeValue, UserError } from "./errors";
import { type Layer, type LayerName, type StackFile, readStackFile } from "./layers";
import { stackFileValues } from "../components/config/stackValues";
import type { PlatformSpec } from "../components/spec/types";
import { metalIsoUrl, schematicId } from "../components/talos/schematic";
import type { WorkspaceFactory } from "./workspace";

/** Whether a stack-file value is Pulumi's encrypted form. */
export function isSecureValue(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    typeof (value as { secure?: unknown }).secure === "string"
  );
}

/** A layer's stack values as {@link validateStackConfig} takes them. */
interface StackValidationInput {
  readonly layer: LayerName;
  readonly env: string;
  readonly project: string;
  /** The stack file as the operator knows it: `Pulumi.dev.yaml`, `app/Pulumi.prod.yaml`. */
  readonly stackFile: string;
  readonly values: Readonly<Record<string, unknown>>;
  readonly presentKeys: ReadonlySet<string>;
  readonly secretKeys: ReadonlySet<string>;
}

/** What a layer's validation said: problems stop the stack, warnings do not. */
export interface StackValidation {
  /** `<key>: <problem>` lines; none when the stack is valid. */
  readonly problems: readonly string[];
  /** Valid but worth knowing (what the Talos the nodes run deprecated, say). */
  readonly warnings: readonly string[];
  /** What to do before `up` (the ISO each bare-metal node boots from). */
  readonly notes?: readonly string[];
}

/**
 * Every problem the layer's own validation finds, in its words (`<key>: <problem>`), and its
 * warnings. Values the file holds encrypted (`secure:`) are never read, only their keys.
 */
export function validateStackConfig(input: StackValidationInput): StackValidation {
  const { layer, env, project, stackFile, presentKeys, secretKeys } = input;
  const values = { ...input.values };
  try {
    // Called as each layer's loader calls it (components/config: load.ts, bootstrap.ts, app.ts).
    if (layer === "foundation") {
      const { spec, warnings } = checkPlatformConfig(
        { ...values, presentKeys, secretKeys, project },
        stackFile,
        { exampleValues: true },
      );
      return { problems: [], warnings, notes: bareMetalBootNotes(spec) };
    } else if (layer === "bootstrap") {
      validateBootstrapConfig(values, stackFile, secretKeys, project);
    } else {
      validateAppConfig(values, env, secretKeys, project);
    }
    return { problems: [], warnings: [] };
  } catch (error) {
    // StackConfigError carries the list; anything else is the validation itself failing.
    const problems = (error as { problems?: unknown }).problems;
    if (Array.isArray(problems)) return { problems: problems.map(String), warnings: [] };
    const message = error instanceof Error ? error.message : String(error);
    return {
      problems: [
        `${stackFile}: the validation failed; got ${JSON.stringify(message.split("\n")[0])}. This is a bug: rerun with PLATFORM_DEBUG=1 and report it`,
      ],
      warnings: [],
    };
  }
}

/**
 * The Image Factory ISO each bare-metal node boots from before `up` (it then waits in maintenance
 * mode for its config), one line per image: the schematic the program registers for the metal
 * platform and the node's architecture, at the cluster's Talos version.
 */
export function bareMetalBootNotes(spec: PlatformSpec): string[] {
  const byIso = new Map<string, string[]>();
  for (const node of spec.nodes) {
    if (node.platform !== "baremetal") continue;
    const { imageFactory, talosVersion } = spec.cluster;
    const id = schematicId(imageFactory, "baremetal", node.architecture);
    const iso =
      id === undefined
        ? `the Image Factory's metal-${node.architecture}.iso of the stack's schematic at ${talosVersion} (an extension or kernel argument here needs quoting, so its ID is the Factory's to tell: docs/platforms.md)`
        : metalIsoUrl(id, talosVersion, node.architecture);
    byIso.set(iso, [...(byIso.get(iso) ?? []), node.name]);
  }
  return [...byIso].map(
    ([iso, names]) =>
      `boot before up (each then waits in maintenance mode): ${names.join(", ")} from ${iso}`,
  );
}

/** Checks a layer's stack values, as {@link validateStackConfig} does (injectable for tests). */
export type ValidateStack = (input: StackValidationInput) => StackValidation;

/**
 * Where the credentials come from for this check: a `bws secret list` made for the run, or
 * `offline` (validate: Bitwarden is not asked, a credential expected there is only noted).
 */
type BitwardenListing = SecretsByKey | undefined | "offline";

/** What was found for one stack. */
export interface StackCheck {
  readonly layer: Layer["name"];
  readonly env: string;
  /** The stack file as the operator knows it (`Pulumi.dev.yaml`, `app/Pulumi.prod.yaml`). */
  readonly stackFile: string;
  /** Every problem, `<key>: <problem>; got <value>. <fix>`: config, credentials, state. */
  readonly problems: readonly string[];
  /** What is fine but worth knowing: the credentials found and their sources. */
  readonly notes: readonly string[];
  /** The credentials found for the run (empty when the file could not be read). */
  readonly credentials: ResolvedCredentials;
}

/** Whether an executable is on the PATH of `env`. */
function hasExecutable(name: string, env: Env): boolean {
  return (env.PATH ?? "").split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK);
      return dir !== "";
    } catch {
      return false;
    }
  });
}

function missingCredential(credential: Credential, listed: boolean): string {
  return (
    `${credential.configKey}: missing credential, the ${credential.what}; got nothing from ` +
    `${credentialPlaces(credential, listed)}. Provide it in one of those places (docs/credentials.md)`
  );
}

/** A value as one shell word. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * `PULUMI_BACKEND_URL=… [PULUMI_CONFIG_PASSPHRASE_FILE=…] ` for a plain `pulumi` command on the
 * stack, as the CLI would run it; nothing for what the operator's environment already sets, and
 * undefined when the backend cannot be told (its own problem is reported).
 */
function stackCommandPrefix(input: {
  readonly processEnv: Env;
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly repoRoot: string;
}): string | undefined {
  const orNothing = <T>(get: () => T): T | undefined => {
    try {
      return get();
    } catch (error) {
      if (!(error instanceof UserError)) throw error;
      return undefined;
    }
  };
  const backend = orNothing(() => chooseBackend({ ...input, env: input.processEnv }));
  if (backend === undefined) return undefined;
  // A passphrase the stack needs but nobody set is reported on its own; the backend still helps.
  const passphrase = orNothing(() =>
    preparePassphrase({
      env: input.processEnv,
      secrets: chooseSecretsProvider(input.stackFile),
      backend,
      repoRoot: input.repoRoot,
      mayCreate: false,
    }),
  );
  const vars = {
    ...(backend.source === "PULUMI_BACKEND_URL" ? {} : { PULUMI_BACKEND_URL: backend.url }),
    ...passphrase?.envVars,
  };
  return Object.entries(vars)
    .map(([name, value]) => `${name}=${shellWord(value)} `)
    .join("");
}

/** Checks one stack of a layer: config, credentials, state settings. Reads files, writes none. */
export function checkStack(input: {
  readonly repoRoot: string;
  readonly layer: Layer;
  readonly env: string;
  readonly processEnv: Env;
  readonly bitwarden: BitwardenListing;
  readonly validate: ValidateStack;
  /** Secret keys the run adds right before the engine starts (CI's OIDC token for OpenBao). */
  readonly runKeys?: readonly string[];
}): StackCheck {
  const { repoRoot, layer, env, processEnv } = input;
  const base = {
    layer: layer.name,
    env,
    stackFile: path.relative(repoRoot, path.join(layer.dir, `Pulumi.${env}.yaml`)),
  };
  let stackFile: StackFile;
  try {
    stackFile = readStackFile(layer, env);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    return {
      ...base,
      problems: [error.message],
      notes: [],
      credentials: { runSecrets: {}, sources: {}, engineEnv: {}, leftInStackFile: [] },
    };
  }
  const shown = path.relative(repoRoot, stackFile.path);
  const offline = input.bitwarden === "offline";
  const bitwarden = offline ? undefined : (input.bitwarden as SecretsByKey | undefined);
  const found = findCredentials({ layer, stackFile, env: processEnv, bitwarden });
  const problems: string[] = [];
  const notes: string[] = [];

  // Bitwarden is not asked offline: a credential it may hold is noted, not counted as missing.
  const bitwardenSet =
    offline && processEnv.BWS_ACCESS_TOKEN !== undefined && processEnv.BWS_ACCESS_TOKEN !== "";
  const missing = bitwardenSet ? [] : found.missing;
  const unverified = bitwardenSet ? found.missing : [];

  const { values, presentKeys, secretKeys } = stackFileValues(stackFile.config, layer.project);
  // What the CLI hands the program for the run is present and secret, unless the file holds the key
  // (a plain-text credential there stays plain, so the validation still refuses it).
  const runKeys = [
    ...Object.keys(found.runSecrets).map((key) => key.slice(layer.project.length + 1)),
    ...(input.runKeys ?? []),
  ].filter((key) => !presentKeys.has(key));
  // A credential already reported (or expected from Bitwarden) is not reported again by the config.
  const covered = [...missing, ...unverified].map((c) => `${c.configKey}:`);
  const validation = input.validate({
    layer: layer.name,
    env,
    project: layer.project,
    stackFile: shown,
    values,
    presentKeys: new Set([...presentKeys, ...runKeys]),
    secretKeys: new Set([...secretKeys, ...runKeys]),
  });
  // The validation's `pulumi config set --secret` hints, with the stack's backend (and passphrase
  // file) in front: run bare, the Pulumi CLI would ask for a Pulumi Cloud login instead.
  const withBackend = stackCommandPrefix({ processEnv, layer, stackFile, repoRoot });
  problems.push(
    ...validation.problems
      .filter((problem) => !covered.some((prefix) => problem.startsWith(prefix)))
      .map((problem) =>
        withBackend === undefined
          ? problem
          : problem.replaceAll(
              "`pulumi config set --secret ",
              `\`${withBackend}pulumi config set --secret `,
            ),
      ),
  );
  notes.push(...validation.warnings.map((warning) => `warning: ${warning}`));
  notes.push(...(validation.notes ?? []));
  problems.push(...missing.map((c) => missingCredential(c, bitwarden !== undefined)));
  if (bitwardenSet && !hasExecutable("bws", processEnv)) {
    problems.push(
      "bws: BWS_ACCESS_TOKEN is set but the Bitwarden Secrets Manager CLI is not on PATH; got no bws. Install bws (https://github.com/bitwarden/sdk-sm/releases), or unset BWS_ACCESS_TOKEN",
    );
  }

  try {
    const backend = chooseBackend({ env: processEnv, layer, stackFile, repoRoot });
    const secrets = chooseSecretsProvider(stackFile);
    preparePassphrase({ env: processEnv, secrets, backend, repoRoot, mayCreate: false });
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    problems.push(error.message);
  }

  const sources = Object.entries(found.sources);
  if (sources.length > 0) {
    notes.push(`credentials: ${sources.map(([key, source]) => `${key} (${source})`).join(", ")}`);
  }
  for (const credential of unverified) {
    notes.push(
      `${credential.configKey}: expected from Bitwarden secret "${credential.bitwardenKey}" ` +
        "(not checked: validate works offline; preview asks Bitwarden)",
    );
  }
  const credentials: ResolvedCredentials = {
    runSecrets: found.runSecrets,
    sources: found.sources,
    engineEnv: found.engineEnv,
    leftInStackFile: found.leftInStackFile,
  };
  return { ...base, stackFile: shown, problems, notes, credentials };
}

/**
 * The Pulumi CLI the Automation API will use (installing it with `install`), or what is wrong with
 * it as one line of the readiness report rather than an error of its own.
 */
export async function findCli(workspaces: WorkspaceFactory, install: boolean): Promise<CliProbe> {
  try {
    const found = await workspaces.ensureCli({ install });
    return { ok: true, command: found.command, version: found.version };
  } catch (error) {
    if (!(error instanceof UserError) || error.exitCode !== ExitCode.missingCli) throw error;
    return {
      ok: false,
      problem: `${error.problem.problem}; got ${error.problem.got}`,
      fix: error.problem.fix,
    };
  }
}

/** The lines of one stack's part of the report. */
function formatStackCheck(check: StackCheck): string[] {
  const count = check.problems.length;
  const verdict = count === 0 ? "ready to preview" : `${count} problem${count === 1 ? "" : "s"}`;
  return [
    `${check.layer}/${check.env} (${check.stackFile}): ${verdict}`,
    ...check.problems.map((problem) => `  - ${problem.replace(/\n/g, "\n    ")}`),
    ...check.notes.map((note) => `    ${note}`),
  ];
}

/** The Pulumi CLI's line of the report. */
function formatCli(cli: CliProbe): string {
  return cli.ok
    ? `Pulumi CLI: ${cli.version} (${cli.command})`
    : `Pulumi CLI: ${cli.problem}. ${cli.fix}`;
}

/** Whether every stack and the CLI are ready. */
function isReady(checks: readonly StackCheck[], cli: CliProbe): boolean {
  return cli.ok && checks.every((check) => check.problems.length === 0);
}

/** The exit code of a report: 2 for problems in the stacks, else 5 for the Pulumi CLI, else 0. */
export function readinessExitCode(checks: readonly StackCheck[], cli: CliProbe): ExitCodeValue {
  if (checks.some((check) => check.problems.length > 0)) return ExitCode.usage;
  return cli.ok ? ExitCode.ok : ExitCode.missingCli;
}

/** The whole report: each stack, the CLI, and a last line that sums it up. */
export function formatReadiness(
  command: string,
  checks: readonly StackCheck[],
  cli: CliProbe,
): string {
  const ready = checks.filter((check) => check.problems.length === 0).length;
  const verdict = isReady(checks, cli)
    ? "ready to preview"
    : [
        ready < checks.length ? `${checks.length - ready} with problems` : "",
        cli.ok ? "" : "no usable Pulumi CLI",
      ]
        .filter((part) => part !== "")
        .join("; ");
  return [
    ...checks.flatMap(formatStackCheck),
    formatCli(cli),
    `${command}: ${ready} of ${checks.length} stack${checks.length === 1 ? "" : "s"} ready; ${verdict}`,
    "",
  ].join("\n");
}
