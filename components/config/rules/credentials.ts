// Credentials are secrets: a credential key written in plain text in a stack file is refused with the
// command that stores it encrypted, and so is a URL with a password or token inside. The helpers are
// shared with the app and bootstrap layers. Values are never echoed.
import * as path from "node:path";
import { FOUNDATION_SECRET_KEYS } from "../keys";
import type { KeyPath, Problems } from "../problems";
import { urlCredential } from "../urlCredentials";
import type { Rule } from "./rule";

/**
 * `pulumi config set --secret <key>` for the stack of `stackFile` (`app/Pulumi.staging.yaml` → the
 * app folder's staging stack). Without a value on the command line Pulumi asks for it, so the secret
 * lands neither in the shell history nor in a process list.
 */
function configSetSecretCommand(stackFile: string, key: string): string {
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
      problems.add([key], "is a credential in plain text (value not shown)", {
        hint: `Run \`${configSetSecretCommand(stackFile, key)}\` and enter it when asked, or leave it out for the CLI to supply (docs/credentials.md)`,
      });
    }
  }
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
      `carries a credential (${credential}), which would be stored in plain text`,
      {
        got: value,
        hint: fix,
      },
    );
  }
}

/** The foundation's credentials are secrets, never plain text. */
export const plainTextCredentials: Rule = ({ presentKeys, secretKeys, stackFile }, problems) =>
  checkPlainTextCredentials(FOUNDATION_SECRET_KEYS, presentKeys, secretKeys, stackFile, problems);

/** The Proxmox API URL carries no credential (the token is the proxmoxApiToken secret). */
export const proxmoxEndpoint: Rule = ({ raw }, problems) => {
  // Read from the raw value: an http:// URL fails the schema but its credential is a problem too.
  const proxmox = raw.proxmox as { endpoint?: unknown } | undefined;
  checkUrlCredential(
    ["proxmox", "endpoint"],
    proxmox?.endpoint,
    "The API token goes in the proxmoxApiToken secret (docs/credentials.md)",
    problems,
  );
};
