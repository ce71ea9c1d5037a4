// Where the app layer puts OpenBao's Kubernetes auth method (`auth/<kubernetesAuthPath>`) and its KV
// mount (`<kvMount>`): never on a path OpenBao keeps for itself, never on CI's own JWT auth method, and
// never one name for both. OpenBao refuses most of these only when the mount is created, after the
// policies before it were written; and the generated CI policies grant per path, so an app path equal
// to CI's own would give the app's rules for it to CI's login too (OpenBao unions the rules of a path).
import type { Problems } from "../problems";

/** Where CI's JWT auth method is mounted (`auth/jwt-github`): its roles decide what CI may do. */
export const CI_JWT_PATH = "jwt-github";

/**
 * OpenBao's own paths: the mounts it refuses to mount over or remount (`sys/`, `auth/`, `audit/`,
 * `cubbyhole/`, `identity/`: protectedMounts in vault/mount.go) and the token auth method
 * (`auth/token`, protectedAuths in vault/auth.go). A name here means OpenBao's, never the app's.
 */
export const OPENBAO_SYSTEM_PATHS: readonly string[] = [
  "sys",
  "auth",
  "audit",
  "token",
  "identity",
  "cubbyhole",
];

/** The stack's defaults (components/config/app.ts applies the same). */
export const DEFAULT_KUBERNETES_AUTH_PATH = "kubernetes";
export const DEFAULT_KV_MOUNT = "secret";

type PathKey = "kubernetesAuthPath" | "kvMount";

const DEFAULTS: Record<PathKey, string> = {
  kubernetesAuthPath: DEFAULT_KUBERNETES_AUTH_PATH,
  kvMount: DEFAULT_KV_MOUNT,
};

/** What each key names, for messages. */
const WHAT: Record<PathKey, string> = {
  kubernetesAuthPath: "the Kubernetes auth method",
  kvMount: "the KV mount",
};

/**
 * Refuses `openbao.kubernetesAuthPath` and `openbao.kvMount` on OpenBao's own paths, on CI's JWT auth
 * method, or equal to each other. `openbao` is the section as written; a value that is not a string
 * is the schema's to report.
 */
export function checkOpenbaoPaths(openbao: Record<string, unknown>, problems: Problems): void {
  const given = (key: PathKey) =>
    typeof openbao[key] === "string" ? (openbao[key] as string) : undefined;
  const refused = new Set<PathKey>();
  for (const key of ["kubernetesAuthPath", "kvMount"] as const) {
    const value = given(key);
    if (value === undefined) continue;
    const hint = `Give ${WHAT[key]} a path of its own, e.g. ${DEFAULTS[key]} (the default)`;
    const segment = value.toLowerCase();
    if (segment === CI_JWT_PATH) {
      problems.add(
        ["openbao", key],
        `is CI's own JWT auth method (auth/${CI_JWT_PATH}), whose roles decide what CI may do`,
        { got: value, hint },
      );
      refused.add(key);
    } else if (OPENBAO_SYSTEM_PATHS.includes(segment)) {
      problems.add(
        ["openbao", key],
        `is one of OpenBao's own paths (${OPENBAO_SYSTEM_PATHS.join(", ")})`,
        { got: value, hint },
      );
      refused.add(key);
    }
  }
  if (refused.size > 0) return;
  // One name for both would make `<name>/…` and `auth/<name>/…` in policies and the audit log two
  // different things under one name; a key left out takes its default.
  const kubernetes = given("kubernetesAuthPath") ?? DEFAULT_KUBERNETES_AUTH_PATH;
  const kv = given("kvMount") ?? DEFAULT_KV_MOUNT;
  if (kubernetes.toLowerCase() !== kv.toLowerCase()) return;
  const key: PathKey = given("kvMount") !== undefined ? "kvMount" : "kubernetesAuthPath";
  const other: PathKey = key === "kvMount" ? "kubernetesAuthPath" : "kvMount";
  problems.add(
    ["openbao", key],
    `is also openbao.${other}${given(other) === undefined ? " (its default)" : ""}`,
    {
      got: given(key),
      hint: "Give the Kubernetes auth method and the KV mount a name each",
    },
  );
}
