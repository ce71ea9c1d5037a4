// The Flux handoff as Talos machine-config: Talos applies Flux's release manifests (extraManifests)
// and the sync objects pointing Flux at Git (inlineManifests) when it bootstraps the cluster. After
// that Flux owns everything in the cluster; the foundation never talks to the Kubernetes API.
import { stringify } from "yaml";
import type { FluxSpec } from "../spec/types";
import type { ConfigDocument } from "../talos/patches";

/** Where a Flux release's install manifests are published. */
function fluxInstallUrl(version: string): string {
  return `https://github.com/fluxcd/flux2/releases/download/${version}/install.yaml`;
}

const NAME = "flux-system";

/** The Kubernetes objects that point Flux at the repository (the deploy key Secret for ssh). */
function fluxSyncManifests(
  flux: FluxSpec,
  deployKey: string | undefined,
): Record<string, unknown>[] {
  const metadata = { name: NAME, namespace: NAME };
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: NAME } },
    ...(flux.ssh
      ? [
          {
            apiVersion: "v1",
            kind: "Secret",
            metadata,
            type: "Opaque",
            stringData: { identity: deployKey ?? "", known_hosts: flux.knownHosts ?? "" },
          },
        ]
      : []),
    {
      apiVersion: "source.toolkit.fluxcd.io/v1",
      kind: "GitRepository",
      metadata,
      spec: {
        interval: "1m0s",
        url: flux.repository,
        ref: { branch: flux.branch },
        ...(flux.ssh ? { secretRef: { name: NAME } } : {}),
      },
    },
    {
      apiVersion: "kustomize.toolkit.fluxcd.io/v1",
      kind: "Kustomization",
      metadata,
      spec: {
        interval: "10m0s",
        path: `./${flux.path.replace(/^\.?\//, "")}`,
        prune: true,
        sourceRef: { kind: "GitRepository", name: NAME },
      },
    },
  ];
}

/** The control-plane patch that hands the cluster to Flux at bootstrap. */
export function fluxHandoffPatch(flux: FluxSpec, deployKey: string | undefined): ConfigDocument {
  return {
    cluster: {
      extraManifests: [fluxInstallUrl(flux.version)],
      inlineManifests: [
        {
          name: `${NAME}-sync`,
          contents: fluxSyncManifests(flux, deployKey)
            .map((m) => stringify(m))
            .join("---\n"),
        },
      ],
    },
  };
}

/** A stand-in of a deploy key's size (an ed25519 OpenSSH private key), for user-data estimates. */
export const DEPLOY_KEY_PLACEHOLDER = "x".repeat(420);
