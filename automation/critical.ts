// Which resources must never be replaced or deleted by accident: losing one loses the cluster, its
// state or its secrets. A preview summary calls their replacement or deletion out at the top.
import type { StepEventMetadata, StepEventStateMetadata } from "@pulumi/pulumi/automation";

/** Machine types that run a Talos node; a control plane among them holds an etcd member. */
const MACHINE_TYPES: readonly string[] = [
  "proxmoxve:index/vmLegacy:VmLegacy",
  "proxmoxve:index/vm:Vm",
  "proxmoxve:cloned/vmLegacy:VmLegacy",
  "proxmoxve:cloned/vm:Vm",
  "oci:Core/instance:Instance",
  "openstack:compute/instance:Instance",
];

/** Resource types critical whatever their inputs, and why. */
export const CRITICAL_TYPES: Readonly<Record<string, string>> = {
  "talos:machine/secrets:Secrets": "the cluster's machine secrets: a new one orphans every node",
  "gcp:storage/bucket:Bucket": "a state bucket: it holds the Pulumi state of the other layers",
  "gcp:kms/cryptoKey:CryptoKey": "a KMS key: the stack secrets encrypted with it become unreadable",
  "gcp:kms/keyRing:KeyRing": "a KMS key ring: the keys in it and what they encrypt go with it",
  "vault:index/mount:Mount": "an OpenBao secrets mount: every secret stored in it is destroyed",
  "vault:index/authBackend:AuthBackend":
    "an OpenBao auth method: its roles and every token issued through it are gone",
  "vault:jwt/authBackend:AuthBackend":
    "an OpenBao JWT auth method: CI's roles and logins through it are gone",
};

/** The role value that marks a machine of the control plane. */
const CONTROL_PLANE_TAG = "controlplane";

/**
 * Whether a machine's inputs tag it as a control plane, as the node components do: the Proxmox VM's
 * and the OpenStack instance's `tags` list holds `controlplane`, the OCI instance's `freeformTags`
 * and the OpenStack instance's `metadata` map `talos-role` to it (`role=controlplane` also counts).
 */
export function taggedControlPlane(inputs: Record<string, unknown> | undefined): boolean {
  if (!inputs) return false;
  const values: unknown[] = [];
  for (const field of ["tags", "freeformTags", "metadata"]) {
    const value = inputs[field];
    if (Array.isArray(value)) values.push(...value);
    else if (value !== null && typeof value === "object") values.push(...Object.values(value));
  }
  return values.some(
    (value) =>
      typeof value === "string" &&
      [CONTROL_PLANE_TAG, `role=${CONTROL_PLANE_TAG}`, `role:${CONTROL_PLANE_TAG}`].includes(
        value.toLowerCase(),
      ),
  );
}

/** Why losing this resource would hurt, or undefined for an ordinary resource. */
export function criticalReason(metadata: StepEventMetadata): string | undefined {
  // The engine sends `old`/`new` as null when a step has none (a create, a delete).
  const states = [metadata.old, metadata.new].filter(
    (state): state is StepEventStateMetadata => state !== undefined && state !== null,
  );
  const reasons: string[] = [];
  if (states.some((state) => state.protect === true)) reasons.push("protected");
  const byType = CRITICAL_TYPES[metadata.type];
  if (byType) reasons.push(byType);
  if (MACHINE_TYPES.includes(metadata.type) && states.some((s) => taggedControlPlane(s.inputs))) {
    reasons.push("a control-plane machine: it holds an etcd member");
  }
  return reasons.length > 0 ? reasons.join("; ") : undefined;
}
