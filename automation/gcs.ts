// Cloud Storage's JSON API, the few requests the CLI makes itself (the stacks' leases in a gs://
// backend), authorised as the engine is for gs:// (GOOGLE_CREDENTIALS, else application default
// credentials) through google-auth-library, which is loaded only when a request is made.
import type { Env } from "./env";

/** Sends one request to Cloud Storage's JSON API; the answer's status, body and generation. */
export type GcsRequest = (
  method: "GET" | "POST" | "DELETE",
  url: string,
  body?: string,
) => Promise<{ readonly status: number; readonly body: string; readonly generation?: string }>;

/** Cloud Storage's JSON API endpoint: STORAGE_EMULATOR_HOST (an emulator) or Google's. */
export function gcsEndpoint(env: Env): string {
  const emulator = env.STORAGE_EMULATOR_HOST;
  if (!emulator) return "https://storage.googleapis.com";
  return /^https?:\/\//.test(emulator) ? emulator.replace(/\/$/, "") : `http://${emulator}`;
}

/**
 * Requests with the credentials the engine gets for gs:// (GOOGLE_CREDENTIALS, else application
 * default credentials), through google-auth-library, or none for an emulator.
 */
export function gcsRequester(env: Env): GcsRequest {
  let client: Promise<(url: string, init: RequestInit) => Promise<Response>> | undefined;
  const authorized = () =>
    (client ??= (async () => {
      if (env.STORAGE_EMULATOR_HOST) return (url: string, init: RequestInit) => fetch(url, init);
      const { GoogleAuth } = await import("google-auth-library");
      const auth = new GoogleAuth({
        scopes: ["https://www.googleapis.com/auth/devstorage.read_write"],
        ...(env.GOOGLE_CREDENTIALS ? { credentials: JSON.parse(env.GOOGLE_CREDENTIALS) } : {}),
      });
      const authClient = await auth.getClient();
      return async (url: string, init: RequestInit) => {
        const headers = await authClient.getRequestHeaders(url);
        return fetch(url, {
          ...init,
          headers: { ...Object.fromEntries(headers), ...init.headers },
        });
      };
    })());
  return async (method, url, body) => {
    const send = await authorized();
    const response = await send(url, {
      method,
      ...(body !== undefined
        ? { body, headers: { "Content-Type": "application/json" } }
        : { headers: {} }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let generation = response.headers.get("x-goog-generation") ?? undefined;
    if (generation === undefined && method === "POST" && response.ok) {
      generation = String((JSON.parse(text) as { generation?: unknown }).generation ?? "");
    }
    return { status: response.status, body: text, ...(generation ? { generation } : {}) };
  };
}
