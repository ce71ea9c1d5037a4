// Cloud nodes (OCI, OpenStack) get their whole machine config as instance user data, and the cloud's
// metadata service hands it to anything on the instance that asks at 169.254.169.254 — pods too,
// since pod traffic leaves the node from the node's address. A control plane's config holds every
// cluster CA key. With `cni: cilium` the program adds this CiliumClusterwideNetworkPolicy (as a Talos
// inline manifest on control planes), denying every pod egress to that address. Pure.
import { stringify } from "yaml";
/** One config document or v1alpha1 fragment (as in ./patches, which imports this file). */
type ConfigDocument = Record<string, unknown>;

/** The metadata service's address on OCI and OpenStack (IPv4 link-local; IPv6 ones are not routed from pods). */
export const METADATA_SERVICE_CIDR = "169.254.169.254/32";

/**
 * The inline manifest's name. Talos applies manifests in the order of their IDs (`99-<name>` for
 * extraManifests and inlineManifests alike) and stops at an object whose kind is not registered yet;
 * Cilium's operator registers the CiliumClusterwideNetworkPolicy kind only once Cilium runs. A name
 * after `https://…` (the Cilium manifest's URL) keeps the policy behind Cilium: Talos retries it until
 * the kind exists, and everything before it is already applied.
 */
export const METADATA_DENY_MANIFEST = "zz-talos-platform-deny-pod-metadata";

/** The policy object's name. */
export const METADATA_DENY_POLICY = "talos-platform-deny-pod-metadata";

/**
 * The policy: every Cilium endpoint (pod) selected, egress to the metadata service denied. A
 * policy selecting an endpoint puts it into default deny for each direction it has rules for (deny
 * rules included) unless `enableDefaultDeny` says otherwise (Cilium 1.16+): both directions are off
 * here, so every other flow stays as it was. Host-network pods are not Cilium endpoints and keep access.
 */
export function metadataDenyPolicy(): Record<string, unknown> {
  return {
    apiVersion: "cilium.io/v2",
    kind: "CiliumClusterwideNetworkPolicy",
    metadata: { name: METADATA_DENY_POLICY },
    spec: {
      description:
        "talos-platform: pods may not read the cloud metadata service, which serves cloud nodes' machine configs (docs/platforms.md: Cilium)",
      endpointSelector: {},
      enableDefaultDeny: { egress: false, ingress: false },
      egressDeny: [{ toCIDR: [METADATA_SERVICE_CIDR] }],
    },
  };
}

/** The control-plane patch carrying the policy as an inline manifest. */
export function metadataDenyPatch(): ConfigDocument {
  return {
    cluster: {
      inlineManifests: [
        { name: METADATA_DENY_MANIFEST, contents: stringify(metadataDenyPolicy()) },
      ],
    },
  };
}
