// The foundation layer's program: read and validate the stack, build the cluster, return the outputs.
import * as pulumi from "@pulumi/pulumi";
import { loadPlatformConfig } from "./config/load";
import { AddressesByName, TalosCluster } from "./talos/cluster";

/** The foundation stack's outputs. */
export interface FoundationOutputs {
  readonly clusterName: string;
  /** `https://<endpoint>:6443`. */
  readonly endpoint: pulumi.Output<string>;
  /** Talos API addresses by role, then node name. */
  readonly nodes: pulumi.Output<{ controlplane: AddressesByName; worker: AddressesByName }>;
  readonly talosVersion: string;
  readonly kubernetesVersion: string;
  /** Hash of the config applied to each pushed node (drift checks compare against it). */
  readonly configHashes: pulumi.Output<Record<string, string>>;
  /** Admin kubeconfig (secret). */
  readonly kubeconfig: pulumi.Output<string>;
  /** talosconfig (secret). */
  readonly talosconfig: pulumi.Output<string>;
}

/** Runs the foundation program for the current stack. Throws before creating anything if the stack file is invalid. */
export function foundation(): FoundationOutputs {
  const { spec, secrets } = loadPlatformConfig();
  const cluster = new TalosCluster(spec.cluster.name, {
    cluster: spec.cluster,
    nodes: spec.nodes,
    platforms: {
      proxmox: spec.proxmox && { settings: spec.proxmox, apiToken: secrets.proxmoxApiToken },
      oci: spec.oci,
      openstack: spec.openstack,
    },
  });
  return {
    clusterName: spec.cluster.name,
    endpoint: cluster.endpoint,
    nodes: pulumi
      .all([cluster.controlPlanes, cluster.workers])
      .apply(([controlplane, worker]) => ({ controlplane, worker })),
    talosVersion: spec.cluster.talosVersion,
    kubernetesVersion: spec.cluster.kubernetesVersion,
    configHashes: cluster.configHashes,
    kubeconfig: cluster.kubeconfig,
    talosconfig: cluster.talosconfig,
  };
}
