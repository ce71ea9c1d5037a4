// Credentials the platform CLI found for this run (in Bitwarden or the environment) reach the program
// through one environment variable of the engine, never through argv and never through the stack
// file: the Automation API passes a workspace's envVars to the Pulumi CLI, which hands its
// environment on to the language host and the program. The config modules read them (runSecrets.ts)
// as secrets, before the stack's own encrypted config: the CLI resolves Bitwarden, then the
// environment, then the stack file, and the program keeps that order. No Pulumi import here, so
// the CLI shares the variable's name and format without loading the SDK.

/** The environment variable holding the run's credentials: JSON, full config key → value. */
export const RUN_SECRETS_ENV = "TALOS_PLATFORM_RUN_SECRETS";

/** The run's credentials by full config key (`talos-platform:proxmoxApiToken`); none when unset. */
export function runSecrets(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Readonly<Record<string, string>> {
  const raw = env[RUN_SECRETS_ENV];
  if (raw === undefined || raw === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // Never echo the value: it holds credentials.
    throw new Error(`${RUN_SECRETS_ENV}: not JSON; it is set by the platform CLI, unset it`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(
      `${RUN_SECRETS_ENV}: not a JSON object; it is set by the platform CLI, unset it`,
    );
  }
  return Object.fromEntries(
    Object.entries(parsed as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== "",
    ),
  );
}
