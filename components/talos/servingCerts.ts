// Kubelet serving-certificate rotation (`rotate-server-certificates`) needs an approver: the kubelet
// asks for its serving certificate with a `kubernetes.io/kubelet-serving` CSR that nothing in
// Kubernetes approves, so without one the CSRs stay pending and `kubectl logs`/`exec`, metrics-server
// and anything else reaching a kubelet fail. Pure, no resources.
import { parseAllDocuments } from "yaml";

/**
 * The Kubelet Serving Certificate Approver (github.com/alex1989hu/kubelet-serving-cert-approver),
 * pinned to a release: its standalone manifest (namespace `kubelet-serving-cert-approver`, least
 * privilege, image tagged with the release), as Talos' docs install it through `extraManifests`.
 */
export const SERVING_CERT_APPROVER_VERSION = "v0.11.0";
export const SERVING_CERT_APPROVER_MANIFEST = `https://raw.githubusercontent.com/alex1989hu/kubelet-serving-cert-approver/${SERVING_CERT_APPROVER_VERSION}/deploy/standalone-install.yaml`;

/** True when a patch turns on the kubelet's serving-certificate rotation (`machine.kubelet.extraArgs`). */
export function enablesServingCertRotation(patches: readonly string[]): boolean {
  return patches.some((text) =>
    parseAllDocuments(text).some((document) => {
      const value = document.toJS() as {
        machine?: { kubelet?: { extraArgs?: Record<string, unknown> } };
      } | null;
      const flag = value?.machine?.kubelet?.extraArgs?.["rotate-server-certificates"];
      return flag === true || flag === "true";
    }),
  );
}
