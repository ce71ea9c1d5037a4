// Credentials inside URLs: found (for the rule that refuses them) and masked (for every message that
// shows a URL). Never echoes what it masks.

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

/**
 * The secret parts of a URL, to redact from messages: its password and the values of its query
 * parameters named like a token (raw and decoded). Empty for a URL without them or no URL.
 */
export function urlSecretValues(value: string): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [];
  }
  const secrets = url.password ? [url.password, decodeURIComponent(url.password)] : [];
  for (const [name, parameter] of url.searchParams) {
    if (SECRET_PARAMETER.test(name)) secrets.push(parameter, encodeURIComponent(parameter));
  }
  return secrets.filter((secret) => secret !== "");
}
