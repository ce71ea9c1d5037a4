// The values of one project's namespace, in the form every layer's validation takes them: the values
// of the keys that are not secret, which keys are present, and which are secret. Two sources: the
// Pulumi runtime (the program under the engine; runtimeValues.ts) and a stack file read from disk
// (the offline `validate` command, here), where a secret is a `secure:` value. Secret values are
// never read. Loads no Pulumi SDK: `validate` must start fast.

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
