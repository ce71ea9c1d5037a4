// The one rule about etcd's bootstrap that the program (a hook on the Bootstrap resource) and the
// CLI's `up` preflight share: what a stack's last outputs say about it. No Pulumi SDK here, so the
// CLI can load it cheaply.
//
// Why outputs: the provider's Bootstrap resource (terraform-provider-talos `talos_machine_bootstrap`,
// v0.11.0) has no read and a no-op delete, and its create calls Talos' Bootstrap API until it
// succeeds. Talos (machined's Bootstrap handler, v1.13) refuses only a node that is not a control
// plane, whose CRI or time sync is not ready, or whose etcd data directory is not empty: a fresh
// replacement of the first control plane, still waiting to join the running etcd, accepts it and
// starts a second, empty etcd. So nothing below the program notices a second bootstrap, and the only
// record that outlives the Bootstrap resource (a `pulumi state delete`, an older export imported, a
// refactor that changes its URN) is the stack's outputs: the engine keeps the last successful `up`'s
// outputs until the next one replaces them, and a `pulumi destroy` that deletes the stack's resources
// deletes them too.
import { createHash } from "node:crypto";
import { parse } from "yaml";

/** The stack output that records the bootstrap: `{ talosCaSha256 }` of the cluster bootstrapped. */
export const BOOTSTRAP_OUTPUT = "etcdBootstrap";

/**
 * What the program exports once etcd is bootstrapped. The cluster is named by its Talos CA (which the
 * protected machine secrets keep for its lifetime), so a stack whose secrets were replaced, which
 * makes a new cluster, may bootstrap that one.
 */
export interface EtcdBootstrapRecord {
  /** SHA-256 (hex) of the Talos CA certificate's PEM text. */
  readonly talosCaSha256: string;
}

/** What a stack's last outputs say about etcd's bootstrap. */
export type BootstrapHistory =
  | { readonly bootstrapped: false }
  | {
      readonly bootstrapped: true;
      /** The bootstrapped cluster's Talos CA fingerprint; undefined when no output names it. */
      readonly talosCaSha256: string | undefined;
      /** Which output says so, for messages. */
      readonly evidence: string;
    };

/**
 * The SHA-256 of a CA certificate's PEM text. The provider hands certificates out base64-encoded
 * (`clientConfiguration.caCertificate`, a talosconfig's `ca`); PEM is taken as it is.
 */
export function caFingerprint(certificate: string): string {
  const text = certificate.trim();
  const pem = text.startsWith("-----BEGIN") ? text : Buffer.from(text, "base64").toString("utf8");
  return createHash("sha256").update(pem.trim()).digest("hex");
}

const SHA256 = /^[0-9a-f]{64}$/;

/** The CA of a talosconfig's current context (what `talosconfig` outputs of older stacks name). */
function talosconfigCa(talosconfig: unknown): string | undefined {
  if (typeof talosconfig !== "string") return undefined;
  try {
    const config = parse(talosconfig) as {
      context?: unknown;
      contexts?: Record<string, { ca?: unknown } | undefined>;
    };
    const ca =
      typeof config?.context === "string" ? config.contexts?.[config.context]?.ca : undefined;
    return typeof ca === "string" && ca !== "" ? caFingerprint(ca) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads a stack's last outputs (plain values, secrets unwrapped). The `etcdBootstrap` record names
 * the cluster; stacks last deployed before it existed count as bootstrapped when they have a
 * `kubeconfig` (fetched only after the bootstrap), named by their talosconfig's CA.
 */
export function bootstrapHistory(outputs: Readonly<Record<string, unknown>>): BootstrapHistory {
  const record = outputs[BOOTSTRAP_OUTPUT] as Partial<EtcdBootstrapRecord> | undefined;
  if (record && typeof record === "object") {
    const ca = record.talosCaSha256;
    return {
      bootstrapped: true,
      // A malformed record still says the cluster was bootstrapped, just not which one.
      talosCaSha256: typeof ca === "string" && SHA256.test(ca) ? ca : undefined,
      evidence: `the stack has an ${BOOTSTRAP_OUTPUT} output`,
    };
  }
  const kubeconfig = outputs.kubeconfig;
  if (typeof kubeconfig === "string" && kubeconfig !== "") {
    return {
      bootstrapped: true,
      talosCaSha256: talosconfigCa(outputs.talosconfig),
      evidence: "the stack has a kubeconfig output",
    };
  }
  return { bootstrapped: false };
}

/**
 * Whether creating a Bootstrap now would bootstrap a bootstrapped cluster again. `currentCa` is the
 * fingerprint of the CA the Bootstrap would use; undefined while unknown, which happens only when
 * the machine secrets are created in this very run (a preview of a new cluster), so a new cluster.
 * A record that names no CA is taken as this cluster's: refusing is the safe side.
 */
export function isSecondBootstrap(
  history: BootstrapHistory,
  currentCa: string | undefined,
): boolean {
  if (!history.bootstrapped || currentCa === undefined) return false;
  return history.talosCaSha256 === undefined || history.talosCaSha256 === currentCa;
}

/** The refusal, in the project's format `<what>: <problem>; got <value>. <fix>`. */
export function secondBootstrapMessage(input: {
  /** The Bootstrap resource's name, e.g. `staging-bootstrap`. */
  readonly resource: string;
  /** The node it would bootstrap: `cp-1 (192.0.2.11)`. */
  readonly node: string;
  readonly evidence: string;
}): string {
  return (
    `etcd bootstrap: up was about to create the cluster's Bootstrap (${input.resource}) although ` +
    `etcd was bootstrapped (${input.evidence}), which would bootstrap etcd a second time; ` +
    `got ${input.node} would be bootstrapped: a second, empty etcd beside the running one. ` +
    `Nothing was bootstrapped. If a change renamed or moved the Bootstrap resource, give it an ` +
    `alias to its old name; if the state lost it, put it back from the export taken before ` +
    `(docs/runbooks/lost-proxmox-host.md step 6). A cluster whose etcd is lost everywhere is ` +
    `restored with \`npm run platform -- etcd restore <env> --from FILE\`, never bootstrapped anew`
  );
}
