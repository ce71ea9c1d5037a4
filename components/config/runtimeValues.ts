// A project's stack values as the Pulumi runtime hands them to the program (the engine's config and
// its secret keys, plus the credentials the CLI passed for the run), in the shape of stackValues.ts.
// Apart from stackValues.ts because it loads the Pulumi SDK, which offline validation never needs.
import * as pulumi from "@pulumi/pulumi";
import { runSecrets } from "./runSecretsEnv";
import { type StackValues, decodeConfigValue } from "./stackValues";

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
