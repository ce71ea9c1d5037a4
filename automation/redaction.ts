// Every credential value of a run, replaced by `[secret]` in the text the CLI prints or writes.
//
// The run's credentials reach the program in a file (components/config/runSecretsEnv.ts),
// not as secret config, so Pulumi's own masking, which knows secret config values only, never sees
// them: a provider's diagnostic or error quoting a token would reach the terminal, the CI log and
// the pull request's summary as it is. The CLI knows each value, so it replaces them itself, in
// one place: its stdout and stderr are wrapped (runCli), and what it writes to files goes through
// {@link Redactor.redact}.
import { urlSecretValues } from "../components/config/urlCredentials";
import { CREDENTIALS } from "./credentials";
import type { Env } from "./env";
import type { TextSink } from "./progress";

/** What a credential value becomes. */
export const REDACTED = "[secret]";

/**
 * Shorter values are not redacted: a value of a few characters (`true`, `dev`) would mangle every
 * line that happens to contain it, and is no credential worth hiding anyway.
 */
export const MIN_SECRET_LENGTH = 6;

/** Variables outside {@link CREDENTIALS} whose values are credentials of the run or its tools. */
const OTHER_SECRET_VARIABLES = [
  "BWS_ACCESS_TOKEN",
  "PULUMI_ACCESS_TOKEN",
  "PULUMI_CONFIG_PASSPHRASE",
  "GOOGLE_OAUTH_ACCESS_TOKEN",
  "CLOUDSDK_AUTH_ACCESS_TOKEN",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AZURE_STORAGE_KEY",
  "AZURE_CLIENT_SECRET",
  "ARM_CLIENT_SECRET",
  "VAULT_TOKEN",
  "BAO_TOKEN",
  "PGPASSWORD",
  "GITHUB_TOKEN",
  "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

/** The variables whose values {@link Redactor.addEnvironment} redacts. */
export const SECRET_VARIABLES: readonly string[] = [
  ...new Set([
    ...Object.values(CREDENTIALS)
      .flat()
      .map((credential) => credential.envVar),
    ...OTHER_SECRET_VARIABLES,
  ]),
];

/** The forms a value may take in engine text: as is, JSON-escaped, base64, URL-encoded. */
function encodings(value: string): string[] {
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    Buffer.from(value).toString("base64"),
    Buffer.from(value).toString("base64url"),
    encodeURIComponent(value),
  ];
  // A multi-line key (PEM, JSON) is often quoted a line at a time; each long line is secret too.
  const lines = value
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length >= 16 && line !== value && !/^-----(BEGIN|END) /.test(line));
  return [...forms, ...lines];
}

/** The known credential values of one run. */
export class Redactor {
  private readonly values = new Set<string>();
  /** The values longest first, so a value containing another is replaced whole. */
  private ordered: string[] = [];

  /** Adds a credential value (and its common encodings); short or missing values are ignored. */
  add(value: string | undefined): void {
    if (value === undefined || value.trim().length < MIN_SECRET_LENGTH) return;
    let added = false;
    for (const form of encodings(value)) {
      if (form.length >= MIN_SECRET_LENGTH && !this.values.has(form)) {
        this.values.add(form);
        added = true;
      }
    }
    if (added) this.ordered = [...this.values].sort((a, b) => b.length - a.length);
  }

  /** Adds each value, e.g. a run's secret config or a Bitwarden listing. */
  addAll(values: Iterable<string>): void {
    for (const value of values) this.add(value);
  }

  /**
   * Adds the credential variables of an environment, and the password and token parameters of a
   * backend URL in it (refused by chooseBackend, but the refusal itself must not print them).
   */
  addEnvironment(env: Env): void {
    for (const name of SECRET_VARIABLES) this.add(env[name]);
    const backend = env.PULUMI_BACKEND_URL;
    if (backend) this.addAll(urlSecretValues(backend));
  }

  /** The text with every known value replaced by {@link REDACTED}. */
  redact(text: string): string {
    let result = text;
    for (const value of this.ordered) {
      if (result.includes(value)) result = result.split(value).join(REDACTED);
    }
    return result;
  }

  /** A copy of a JSON-shaped value with every known value replaced in its strings. */
  redactJson<T>(value: T): T {
    return JSON.parse(this.redact(JSON.stringify(value))) as T;
  }

  /** A sink that writes through this redactor. */
  wrap(sink: TextSink): TextSink {
    return {
      write: (text: string) => sink.write(this.redact(text)),
      get isTTY() {
        return sink.isTTY;
      },
      get columns() {
        return sink.columns;
      },
    };
  }
}
