// Bitwarden Secrets Manager through its `bws` CLI: the foundation's credentials live there (never in
// OpenBao, which runs in the cluster the foundation builds). One `bws secret list` per run.
import { execFile } from "node:child_process";
import { ExitCode, UserError } from "./errors";
import type { Env } from "./env";

/** Secrets by key, as a `bws secret list` returned them. */
export type SecretsByKey = ReadonlyMap<string, string>;

/** Runs `bws` with arguments and environment; resolves to its stdout. */
export type BwsRunner = (args: readonly string[], env: Env) => Promise<string>;

/** The production runner: the `bws` binary on PATH. */
export const execBws: BwsRunner = (args, env) =>
  new Promise((resolve, reject) => {
    execFile(
      "bws",
      [...args],
      { env: { ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });

/** Parses `bws secret list --output json`: an array of `{key, value, ...}`. */
export function parseSecretList(stdout: string): SecretsByKey {
  let items: unknown;
  try {
    items = JSON.parse(stdout);
  } catch {
    throw new UserError({
      what: "bws secret list",
      problem: "did not print JSON",
      got: `${stdout.length} bytes`,
      fix: "Check the bws version (0.3 or newer takes `bws secret list --output json`)",
    });
  }
  const secrets = new Map<string, string>();
  for (const item of Array.isArray(items) ? items : []) {
    const { key, value } = (item ?? {}) as { key?: unknown; value?: unknown };
    if (typeof key === "string" && typeof value === "string") secrets.set(key, value);
  }
  return secrets;
}

/**
 * Lists the secrets the access token can read (of `BWS_PROJECT_ID` when set). Undefined when
 * BWS_ACCESS_TOKEN is not set: Bitwarden is then simply not a source.
 */
export async function listBitwardenSecrets(
  env: Env,
  run: BwsRunner,
): Promise<SecretsByKey | undefined> {
  if (!env.BWS_ACCESS_TOKEN) return undefined;
  const args = [
    "secret",
    "list",
    ...(env.BWS_PROJECT_ID ? [env.BWS_PROJECT_ID] : []),
    "--output",
    "json",
  ];
  try {
    return parseSecretList(await run(args, env));
  } catch (error) {
    if (error instanceof UserError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new UserError(
        {
          what: "bws",
          problem: "BWS_ACCESS_TOKEN is set but the Bitwarden Secrets Manager CLI is not installed",
          got: "no bws on PATH",
          fix: "Install bws (https://github.com/bitwarden/sdk-sm/releases), or unset BWS_ACCESS_TOKEN to take credentials from the environment",
        },
        ExitCode.usage,
      );
    }
    // bws prints the reason (expired token, no access) on stderr; never the token itself.
    const reason = String((error as { stderr?: unknown }).stderr ?? (error as Error).message)
      .trim()
      .split("\n")[0];
    throw new UserError({
      what: "bws secret list",
      problem: "failed",
      got: JSON.stringify(reason),
      fix: "Check BWS_ACCESS_TOKEN (a machine account's access token) and that the account may read the project",
    });
  }
}
