// The credentials of a run (runSecretsEnv.ts) as secret Outputs, before the stack's own config.
import * as pulumi from "@pulumi/pulumi";
import { runSecrets } from "./runSecretsEnv";

/**
 * A credential of the current project: the value the CLI handed over for this run, else the
 * stack's own secret config; always a secret Output.
 */
export function getCredential(
  config: pulumi.Config,
  key: string,
): pulumi.Output<string> | undefined {
  const fromRun = runSecrets()[`${pulumi.getProject()}:${key}`];
  return fromRun !== undefined ? pulumi.secret(fromRun) : config.getSecret(key);
}

/** Which of `keys` the run or the stack provides, without reading (or logging) their values. */
export function presentCredentialKeys(keys: readonly string[]): Set<string> {
  const project = pulumi.getProject();
  const fromRun = runSecrets();
  const all = pulumi.runtime.allConfig();
  return new Set(
    keys.filter((key) => `${project}:${key}` in fromRun || `${project}:${key}` in all),
  );
}
