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
