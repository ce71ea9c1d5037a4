// The OIDC token of a GitHub Actions job, for OpenBao's JWT auth. GitHub's ID tokens are short-lived,
// so the CLI fetches one right before each engine run that logs into OpenBao (not once per job):
// the job needs `permissions: id-token: write`, which sets ACTIONS_ID_TOKEN_REQUEST_URL and
// ACTIONS_ID_TOKEN_REQUEST_TOKEN; the token's `aud` is the audience OpenBao's CI roles bind.
import type { Env } from "./env";
import { UserError } from "./errors";
import { type Layer, readStackFile } from "./layers";

/** The audience of the CI job's OIDC token for OpenBao, when the app stack declares CI roles. */
export function ciAudience(layer: Layer, env: string): string | undefined {
  const openbao = readStackFile(layer, env).config[`${layer.project}:openbao`] as
    { ci?: { audience?: unknown } } | undefined;
  if (!openbao?.ci) return undefined;
  return typeof openbao.ci.audience === "string" ? openbao.ci.audience : "openbao";
}

/** Whether the job may ask GitHub for an OIDC token. */
export function githubOidcAvailable(env: Env): boolean {
  return Boolean(env.ACTIONS_ID_TOKEN_REQUEST_URL && env.ACTIONS_ID_TOKEN_REQUEST_TOKEN);
}

/** Fetches JSON from a URL with headers (global fetch in production; injectable for tests). */
export type FetchJson = (
  url: string,
  headers: Readonly<Record<string, string>>,
) => Promise<unknown>;

/** The production fetcher: Node's fetch, bounded to 30 s. */
const fetchJson: FetchJson = async (url, headers) => {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  return response.json();
};

/**
 * Asks GitHub for the job's OIDC token with `audience` (the request the actions toolkit's
 * `core.getIDToken` makes: GET <ACTIONS_ID_TOKEN_REQUEST_URL>&audience=…, bearer
 * ACTIONS_ID_TOKEN_REQUEST_TOKEN, answer `{"value": "<jwt>"}`). Inside GitHub Actions the token is
 * masked in the job's log first (`::add-mask::`), as `core.setSecret` does.
 */
export async function fetchGithubIdToken(input: {
  readonly env: Env;
  readonly audience: string;
  readonly fetch?: FetchJson;
  /** Where the mask command goes (stdout in production). */
  readonly mask?: (command: string) => void;
}): Promise<string> {
  const { env, audience } = input;
  const base = env.ACTIONS_ID_TOKEN_REQUEST_URL ?? "";
  const url = `${base}${base.includes("?") ? "&" : "?"}audience=${encodeURIComponent(audience)}`;
  let answer: unknown;
  try {
    answer = await (input.fetch ?? fetchJson)(url, {
      Authorization: `bearer ${env.ACTIONS_ID_TOKEN_REQUEST_TOKEN ?? ""}`,
      Accept: "application/json",
    });
  } catch (error) {
    throw new UserError({
      what: "GitHub OIDC token",
      problem: "could not be fetched for OpenBao's JWT login",
      got: JSON.stringify((error as Error).message),
      fix: "Give the job `permissions: id-token: write` (pull requests from forks get no token)",
    });
  }
  const token = (answer as { value?: unknown } | null)?.value;
  if (typeof token !== "string" || token === "") {
    throw new UserError({
      what: "GitHub OIDC token",
      problem: "GitHub's answer has no token",
      got: JSON.stringify(Object.keys((answer as object | null) ?? {})),
      fix: "Rerun the job; if it persists, check GitHub's status",
    });
  }
  if (env.GITHUB_ACTIONS === "true") input.mask?.(`::add-mask::${token}\n`);
  return token;
}
