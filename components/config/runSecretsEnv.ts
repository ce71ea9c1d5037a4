// Credentials the platform CLI found for this run (in Bitwarden or the environment) reach the program
// in a file, never through argv, the stack file or any process's environment: the CLI writes them,
// 0600 in its private run folder (automation/runTemp.ts), before each preview or up, and names the
// file in one environment variable, which the Pulumi CLI hands on to the language host and the
// program, and to every provider plugin as well. The program reads the file once, during its
// config validation and so before it registers any resource (the engine starts a provider plugin
// only when the program registers the first resource of its package), and deletes it: a provider
// plugin finds the name of a file that is gone. The config modules read the values (runSecrets.ts)
// as secrets, before the stack's own encrypted config: the CLI resolves Bitwarden, then the
// environment, then the stack file, and the program keeps that order. No Pulumi import here, so
// the CLI shares the variable's name and the format without loading the SDK.
import * as fs from "node:fs";

/** The environment variable naming the run's credentials file: JSON, full config key → value. */
export const RUN_SECRETS_FILE_ENV = "TALOS_PLATFORM_RUN_SECRETS_FILE";

/** The file read last, and what it held: the program reads it once, then it is gone. */
let taken:
  { readonly file: string; readonly secrets: Readonly<Record<string, string>> } | undefined;

/**
 * The run's credentials by full config key (`talos-platform:proxmoxApiToken`); none when no file
 * is named. The first call reads the file and deletes it; later calls return what it held.
 */
export function runSecrets(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Readonly<Record<string, string>> {
  const file = env[RUN_SECRETS_FILE_ENV];
  if (file === undefined || file === "") return {};
  if (taken?.file === file) return taken.secrets;
  let raw: string;
  try {
    raw = fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(
      `${RUN_SECRETS_FILE_ENV}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "error"}); it is set by the platform CLI for one run, unset it`,
    );
  }
  fs.rmSync(file, { force: true });
  taken = { file, secrets: parseRunSecrets(raw) };
  return taken.secrets;
}

/** The credentials file's JSON object; values that are not non-empty strings are dropped. */
export function parseRunSecrets(raw: string): Readonly<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // Never echo the content: it holds credentials.
    throw new Error(
      `${RUN_SECRETS_FILE_ENV}: its file is not JSON; it is written by the platform CLI`,
    );
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(
      `${RUN_SECRETS_FILE_ENV}: its file is not a JSON object; it is written by the platform CLI`,
    );
  }
  return Object.fromEntries(
    Object.entries(parsed as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "",
    ),
  );
}
