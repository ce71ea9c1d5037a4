// Runs a program under mocks with credentials handed over as the platform CLI does: a file the
// program reads and deletes, named in its environment (components/config/runSecretsEnv.ts).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { RUN_SECRETS_FILE_ENV } from "../../components/config/runSecretsEnv";

/** Runs `fn` with `secrets` (full config key → value) as the run's credentials file. */
export async function withRunSecrets<T>(
  secrets: Readonly<Record<string, string>>,
  fn: () => Promise<T>,
): Promise<T> {
  const before = process.env[RUN_SECRETS_FILE_ENV];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "run-secrets-test-"));
  const file = path.join(dir, "secrets.json");
  fs.writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  process.env[RUN_SECRETS_FILE_ENV] = file;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env[RUN_SECRETS_FILE_ENV];
    else process.env[RUN_SECRETS_FILE_ENV] = before;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
