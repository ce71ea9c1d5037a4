// The foundation layer's program: read and validate the stack, read what the cluster runs from the
// stack's last outputs, build the cluster for that (talos/convergence.ts: disruptive changes wait
// for the CLI's sequenced `platform up`) and the services around it (OpenBao's unseal key, DNS, the
// Flux handoff), return the outputs. Nothing here talks to anything running in the cluster, so it
// previews and applies while the cluster is down.
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { loadPlatformConfig } from "./config/load";
import { StackConfigError } from "./config/problems";
import type { NodeSpec, PlatformSpec } from "./spec/types";
import { fluxHandoffPatch } from "./flux/handoff";
import { etcdBackupPatches, type WriterKey } from "./etcdBackups/manifests";
import { ClusterDns, endpointRecords } from "./gcp/clusterDns";
import { EtcdBackupWriter } from "./gcp/etcdBackupWriter";
import { OpenbaoUnsealKey, SealStanza } from "./gcp/openbaoUnseal";
import { PublishedFoundation, publishedObject } from "./gcp/publishedValues";
import { BOOT_RECORDS_OUTPUT, type BootRecord, mergeBootRecords } from "./talos/bootRecords";
import type { EtcdBootstrapRecord } from "./talos/bootstrapRecord";
import {
  converge,
  convergeRequest,
  lastDeployment,
  type PendingChanges,
} from "./talos/convergence";
import { readLastOutputs } from "./talos/lastOutputs";
import { AddressesByName, TalosCluster } from "./talosCluster";

/** The foundation stack's outputs. */
export interface FoundationOutputs {
  readonly clusterName: string;
  /** `https://<endpoint>:6443`. */
  readonly endpoint: pulumi.Output<string>;
  /** Talos API addresses by role, then node name. */
  readonly nodes: pulumi.Output<{ controlplane: AddressesByName; worker: AddressesByName }>;
  /** The address each node's kubelet reports, by node name (day-two health checks name nodes by it). */
  readonly kubeletAddresses: pulumi.Output<AddressesByName>;
  /** How `up` applied each pushed node's config (`staged`: waits for `rollout`), by node name. */
  readonly applyModes: pulumi.Output<Record<string, string>>;
  /** The Talos version the cluster runs (the stack file's once `platform up` rolled it out). */
  readonly talosVersion: string;
  /** The Kubernetes version every config is generated for: what the cluster runs. */
  readonly kubernetesVersion: string;
  /** The config contract the machine configs were generated for: `up` compares the next one with it. */
  readonly configContract: string;
  /** What the stack file asks for that waits for the sequenced `platform up` (convergence.ts). */
  readonly pendingChanges: PendingChanges;
  /** Hash of the config applied to each pushed node, by node name. */
  readonly configHashes: pulumi.Output<Record<string, string>>;
  /** Each node's machine config as generated (secret), by node name: drift checks compare nodes to it. */
  readonly machineConfigurations: pulumi.Output<Record<string, string>>;
  /** The installer image each node runs, by node name: upgrades use it with the target version's tag. */
  readonly installerImages: pulumi.Output<Record<string, string>>;
  /** The installer image the stack asks for, by node name: a roll upgrades each node to it. */
  readonly desiredInstallers: pulumi.Output<Record<string, string>>;
  /**
   * What each node booted with (secret: digests of its boot-time config fields, for its Talos BootID),
   * as `platform up` read it before pushing: day-two commands tell from it whether a pushed change
   * waits for a reboot (talos/bootRecords.ts).
   */
  readonly bootRecords: pulumi.Output<Record<string, BootRecord>>;
  /** Set once etcd is bootstrapped: later runs never bootstrap this cluster again (bootstrapRecord.ts). */
  readonly etcdBootstrap: pulumi.Output<EtcdBootstrapRecord | undefined>;
  /** Admin kubeconfig (secret). */
  readonly kubeconfig: pulumi.Output<string>;
  /** The Kubernetes API's CA certificate (PEM). */
  readonly kubernetesCaCertificate: pulumi.Output<string>;
  /** talosconfig (secret). */
  readonly talosconfig: pulumi.Output<string>;
  /**
   * OpenBao's gcpckms seal values, its server configuration (the seal stanza, and with
   * `openbao.kmsPlugin` the KMS plugin OpenBao 2.7+ needs) and key (secret), when the stack has an
   * unseal key.
   */
  readonly openbao?: {
    readonly seal: pulumi.Output<SealStanza>;
    readonly sealConfig: pulumi.Output<string>;
    readonly credentials: pulumi.Output<string>;
  };
  /** DNS names created for the cluster. */
  readonly dnsNames?: pulumi.Output<string[]>;
  /** Where Flux was pointed at bootstrap. */
  readonly flux?: { readonly repository: string; readonly branch: string; readonly path: string };
}

/** Static addresses the API endpoint's DNS name points to: the VIP, else the control planes. */
function endpointAddresses(
  spec: PlatformSpec,
  controlPlanes: pulumi.Output<AddressesByName>,
): pulumi.Input<string>[] {
  if (spec.cluster.vip) return [spec.cluster.vip];
  const cps = spec.nodes.filter((n) => n.role === "controlplane");
  return cps.map(
    (node: NodeSpec) => staticAddress(node) ?? controlPlanes.apply((byName) => byName[node.name]),
  );
}

function staticAddress(node: NodeSpec): string | undefined {
  return node.platform === "proxmox" || node.platform === "baremetal"
    ? node.talosAddress
    : node.declaredAddress;
}

/**
 * Runs the foundation program for the current stack. Throws before creating anything when the stack
 * file is invalid or asks for a change only the sequenced `platform up` may make.
 */
export async function foundation(): Promise<FoundationOutputs> {
  const { spec, secrets, warnings } = loadPlatformConfig();
  for (const warning of warnings) void pulumi.log.warn(warning);
  const { services } = spec;
  const flux = services.flux;
  const stackFile = `Pulumi.${pulumi.getStack()}.yaml`;
  const lastOutputs = await readLastOutputs(spec.cluster.name);
  if ("error" in lastOutputs) {
    throw new StackConfigError(stackFile, [
      `the stack's last outputs: what the cluster runs cannot be read, so nothing is changed; got ${JSON.stringify(lastOutputs.error)}. Check access to the stack's backend and rerun`,
    ]);
  }
  const request = convergeRequest();
  const plan = converge(
    { ...spec.cluster, nodes: spec.nodes },
    lastDeployment(lastOutputs.values),
    request,
    pulumi.getStack(),
  );
  if (plan.refusals.length > 0) throw new StackConfigError(stackFile, plan.refusals);
  for (const warning of plan.warnings) void pulumi.log.warn(warning);
  const nodes = spec.nodes.filter((node) => plan.registered.has(node.name));
  // The GCP provider comes before the cluster: the backup job's HMAC key goes into the control planes'
  // configs (as the Kubernetes Secret the job reads it from).
  const provider =
    services.gcp &&
    new gcp.Provider(`${spec.cluster.name}-gcp`, {
      ...services.gcp,
      // A service-account key when the CLI found one; else application default credentials.
      credentials: secrets.gcpCredentials,
    });
  const backups = services.etcdBackups;
  const backupWriter =
    backups?.destination.kind === "gs"
      ? new EtcdBackupWriter(`${spec.cluster.name}-etcd-backup`, {
          gcp: services.gcp!,
          clusterName: spec.cluster.name,
          destination: backups.destination,
          provider: provider!,
        })
      : undefined;
  const fluxDocuments = flux
    ? pulumi.output(secrets.fluxDeployKey).apply((key) => [fluxHandoffPatch(flux, key)])
    : pulumi.output([]);
  const backupDocuments = backups
    ? pulumi
        .output<WriterKey | undefined>(backupWriter?.key)
        .apply((key) => etcdBackupPatches(backups, spec.cluster.name, key))
    : pulumi.output([]);
  const cluster = new TalosCluster(spec.cluster.name, {
    cluster: spec.cluster,
    nodes,
    running: plan,
    lastOutputs,
    platforms: {
      proxmox: spec.proxmox && {
        settings: spec.proxmox,
        apiToken: secrets.proxmoxApiToken,
        sshPrivateKey: secrets.proxmoxSshPrivateKey,
      },
      oci: spec.oci,
      openstack: spec.openstack,
      ociPrivateKey: secrets.ociPrivateKey,
      openstackApplicationCredentialSecret: secrets.openstackApplicationCredentialSecret,
    },
    controlPlaneDocuments: pulumi
      .all([fluxDocuments, backupDocuments])
      .apply(([f, b]) => [...f, ...b]),
  });

  const unseal =
    services.openbao &&
    new OpenbaoUnsealKey(`${spec.cluster.name}-openbao-unseal`, {
      gcp: services.gcp!,
      settings: services.openbao,
      clusterName: spec.cluster.name,
      provider: provider!,
      issuer: { url: spec.cluster.endpointUrl, signingKey: cluster.serviceAccountSigningKey },
      existingKey: secrets.gcpUnsealCredentials,
    });
  const dns =
    services.dns &&
    new ClusterDns(`${spec.cluster.name}-dns`, {
      settings: services.dns,
      project: services.gcp!.project,
      endpointRecords: endpointRecords(
        endpointAddresses({ ...spec, nodes }, cluster.controlPlanes),
      ),
      provider: provider!,
    });

  // On a gs:// backend, the values the app layer reads, where CI can read them without this
  // stack's key (components/gcp/publishedValues.ts).
  const published = publishedObject(
    new pulumi.Config("talos-platform").get("backend") ?? "",
    pulumi.getStack(),
  );
  if (published) {
    new PublishedFoundation(`${spec.cluster.name}-published`, {
      object: published,
      values: pulumi
        .all([cluster.endpoint, cluster.kubernetesCaCertificate])
        .apply(([endpoint, kubernetesCaCertificate]) => ({
          endpoint,
          kubernetesCaCertificate,
          clusterName: spec.cluster.name,
        })),
      provider:
        provider ||
        new gcp.Provider(`${spec.cluster.name}-state-gcp`, {
          credentials: secrets.gcpCredentials,
        }),
    });
  }

  return {
    clusterName: spec.cluster.name,
    endpoint: cluster.endpoint,
    nodes: pulumi
      .all([cluster.controlPlanes, cluster.workers])
      .apply(([controlplane, worker]) => ({ controlplane, worker })),
    kubeletAddresses: cluster.kubeletAddresses,
    applyModes: cluster.applyModes,
    talosVersion: plan.talosVersion,
    kubernetesVersion: plan.kubernetesVersion,
    configContract: plan.configContract,
    pendingChanges: plan.pending,
    configHashes: cluster.configHashes,
    machineConfigurations: cluster.machineConfigurations,
    installerImages: cluster.installerImages,
    desiredInstallers: cluster.desiredInstallers,
    bootRecords: pulumi.secret(
      mergeBootRecords(
        lastOutputs.values[BOOT_RECORDS_OUTPUT],
        request.bootRecords,
        spec.nodes.map((node) => node.name),
      ),
    ),
    etcdBootstrap: cluster.etcdBootstrap,
    kubeconfig: cluster.kubeconfig,
    kubernetesCaCertificate: cluster.kubernetesCaCertificate,
    talosconfig: cluster.talosconfig,
    ...(unseal
      ? {
          openbao: {
            seal: unseal.seal,
            sealConfig: unseal.sealConfig,
            credentials: unseal.credentials,
          },
        }
      : {}),
    ...(dns ? { dnsNames: dns.names } : {}),
    ...(flux
      ? { flux: { repository: flux.repository, branch: flux.branch, path: flux.path } }
      : {}),
  };
}
