// Credentials must be secrets: a credential key given in plain text in a stack file is refused with
// the command that stores it encrypted, and a URL with a password or token inside is refused. Shared by
// the foundation, app and bootstrap layers. Values are never echoed.
import * as path from "node:path";
import type { KeyPath, Problems } from "../problems";

/**
 * `pulumi config set --secret <key>` for the stack of `stackFile` (`app/Pulumi.staging.yaml` → the
 * app folder's staging stack). Without a value on the command line Pulumi asks for it, so the secret
 * lands neither in the shell history nor in a process list.
 */
export function configSetSecretCommand(stackFile: string, key: string): string {
  const dir = path.dirname(stackFile);
  const stack = /^Pulumi\.(.+)\.ya?ml$/.exec(path.basename(stackFile))?.[1];
  return [
    "pulumi config set --secret",
    key,
    ...(stack ? [`--stack ${stack}`] : []),
    ...(dir !== "." ? [`--cwd ${dir}`] : []),
  ].join(" ");
}

/**
 * Records each credential key the stack file sets in plain text: present among the stack's keys but
 * not among its secret keys (a `secure:` value).
 */
export function checkPlainTextCredentials(
  credentialKeys: readonly string[],
  presentKeys: ReadonlySet<string>,
  secretKeys: ReadonlySet<string>,
  stackFile: string,
  problems: Problems,
): void {
  for (const key of credentialKeys) {
    if (presentKeys.has(key) && !secretKeys.has(key)) {
      problems.add(
        [key],
        "is a credential written in plain text in the stack file (value not shown)",
        {
          hint:
            `Store it encrypted: run \`${configSetSecretCommand(stackFile, key)}\` and enter the value when asked, ` +
            "or leave it out and let the CLI supply it (docs/credentials.md)",
        },
      );
    }
  }
}

/** Query parameters that carry a credential. */
const SECRET_PARAMETER =
  /token|secret|password|passwd|pwd|apikey|api_key|key|auth|signature|sig|credential/i;

/** A URL with its credential parts masked, for messages; otherwise as written. */
export function maskUrl(value: string): string {
  return value
    .replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/?#@]*)@/i, (_, scheme: string, userinfo: string) =>
      userinfo.includes(":") ? `${scheme}***:***@` : `${scheme}***@`,
    )
    .replace(/([?&])([^=&#]+)=([^&#]*)/g, (whole, separator: string, name: string) =>
      SECRET_PARAMETER.test(decodeURIComponent(name)) ? `${separator}${name}=***` : whole,
    );
}

/**
 * The credential a URL carries, if any: a password, any user name on http(s) (GitHub and GitLab take a
 * token there), or a query parameter named like a token. `ssh://git@host` names a user, not a secret.
 */
export function urlCredential(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.password) return "a user:password";
  if (url.username && /^https?:$/.test(url.protocol)) return "a user name or token before the host";
  const parameter = [...url.searchParams.keys()].find((name) => SECRET_PARAMETER.test(name));
  return parameter ? `a ${parameter} parameter` : undefined;
}

/** Records a URL (found at `path`) that carries a credential; `fix` says where the credential goes instead. */
export function checkUrlCredential(
  path: KeyPath,
  value: unknown,
  fix: string,
  problems: Problems,
): void {
  if (typeof value !== "string") return;
  const credential = urlCredential(value);
  if (credential) {
    problems.add(
      path,
      `carries a credential in the URL (${credential}), which would be stored in plain text`,
      {
        got: value,
        hint: fix,
      },
    );
  }
}
