// The values of one project's namespace, in the form every layer's validation takes them: the values
// of the keys that are not secret, which keys are present, and which are secret. Two sources: the
// Pulumi runtime (the program under the engine) and a stack file read from disk (the offline
// `validate` command), where a secret is a `secure:` value. Secret values are never read.
import * as pulumi from "@pulumi/pulumi";
import { runSecrets } from "./runSecretsEnv";

/** One namespace's keys, without the `project:` prefix. */
export interface StackValues {
  /** Values of the keys that are not secret, objects decoded. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Every key set in the namespace, secret or not. */
  readonly presentKeys: ReadonlySet<string>;
  /** Keys whose value is a secret (`pulumi config set --secret`); their values are left out. */
  readonly secretKeys: ReadonlySet<string>;
}

/**
 * A config value as the engine hands it to the program: objects and lists arrive as JSON text,
 * scalars as their text. Text that is not JSON stays text, so a YAML user who wrote a scalar where a
 * mapping belongs is told "expected a mapping" rather than the SDK's "not a valid JSON object".
 */
export function decodeConfigValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Whether the engine marked a config key as secret. The engine sends the keys whose stack-file values
 * are `secure:` (`Config.SecureKeys()` in pkg/resource/deploy/source_eval.go) to the language host,
 * which puts them in PULUMI_CONFIG_SECRET_KEYS; the SDK reads them into its store, where
 * `runtime.isConfigSecret` looks. That function is exported by the SDK at run time but marked
 * internal in its type declarations, hence the narrow cast; test/sdk.test.ts pins that it exists.
 */
export function isSecretConfigKey(fullKey: string): boolean {
  const runtime = pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean };
  if (typeof runtime.isConfigSecret !== "function") {
    throw new Error(
      "@pulumi/pulumi no longer exports runtime.isConfigSecret; the stack-file check for plain-text credentials needs it",
    );
  }
  return runtime.isConfigSecret(fullKey);
}

/** The current stack's keys in `project`'s namespace, read from the Pulumi runtime. */
export function runtimeStackValues(project = pulumi.getProject()): StackValues {
  const prefix = `${project}:`;
  const values: Record<string, unknown> = {};
  const presentKeys = new Set<string>();
  const secretKeys = new Set<string>();
  for (const [fullKey, text] of Object.entries(pulumi.runtime.allConfig())) {
    if (!fullKey.startsWith(prefix)) continue;
    const key = fullKey.slice(prefix.length);
    presentKeys.add(key);
    if (isSecretConfigKey(fullKey)) secretKeys.add(key);
    else values[key] = decodeConfigValue(text);
  }
  // Credentials the CLI hands over for the run (never in the stack file) are secrets too; a key the
  // stack file also holds in plain text stays plain, so that check still refuses it.
  for (const fullKey of Object.keys(runSecrets())) {
    if (!fullKey.startsWith(prefix)) continue;
    const key = fullKey.slice(prefix.length);
    if (presentKeys.has(key)) continue;
    presentKeys.add(key);
    secretKeys.add(key);
  }
  return { values, presentKeys, secretKeys };
}

/** True for a value that is or holds a `secure:` ciphertext, as `pulumi config set --secret` writes it. */
function holdsSecret(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsSecret);
  if (value === null || typeof value !== "object") return false;
  const entries = Object.entries(value);
  if (entries.length === 1 && entries[0][0] === "secure") return true;
  return entries.some(([, item]) => holdsSecret(item));
}

/**
 * The keys of `project`'s namespace in a stack file's `config:` mapping (as parsed from YAML), for
 * validating a stack file without the Pulumi engine. Values holding `secure:` ciphertext count as
 * secret and are left out.
 */
export function stackFileValues(
  config: Readonly<Record<string, unknown>>,
  project: string,
): StackValues {
  const prefix = `${project}:`;
  const values: Record<string, unknown> = {};
  const presentKeys = new Set<string>();
  const secretKeys = new Set<string>();
  for (const [fullKey, value] of Object.entries(config)) {
    // A key without a namespace belongs to the project (Pulumi's own rule).
    if (fullKey.includes(":") && !fullKey.startsWith(prefix)) continue;
    const key = fullKey.startsWith(prefix) ? fullKey.slice(prefix.length) : fullKey;
    presentKeys.add(key);
    if (holdsSecret(value)) secretKeys.add(key);
    else values[key] = value;
  }
  return { values, presentKeys, secretKeys };
}
