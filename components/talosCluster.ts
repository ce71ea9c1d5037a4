// The TalosCluster component: Talos' machine secrets, configs, bootstrap and credentials (talos/)
// around the machines of every platform (nodes/). Above both folders because it composes them.
import * as pulumi from "@pulumi/pulumi";
import * as talos from "@pulumiverse/talos";
import { MachineFactory, PlatformSettings } from "./nodes/factory";
import type { OnDestroyAction, TalosMachine } from "./nodes/machine";
import type { ClusterSpec, NodeSpec } from "./spec/types";
import { BootstrapGuard } from "./talos/bootstrapGuard";
import type { Convergence } from "./talos/convergence";
import type { LastOutputs } from "./talos/lastOutputs";
import type { EtcdBootstrapRecord } from "./talos/bootstrapRecord";
import { CaAuthorities } from "./talos/caAuthorities";
import { clientCredentials, ClientCredentials } from "./talos/credentials";
import { ImageCatalog } from "./talos/imageFactory";
import { ConfigDocument, MachineFacts, machinePatches } from "./talos/patches";
import { checkUserDataSizes } from "./talos/userDataGate";

/**
 * How long before its expiry the provider renews the admin kubeconfig's client certificate
 * (docs/day-two.md#certificates): 90 days, at least 60 before the drift job's 30-day alarm.
 */
export const KUBECONFIG_RENEWAL = "2160h";
/** Inputs of a {@link TalosCluster}: validated settings, never raw config. */
export interface TalosClusterArgs {
  readonly cluster: ClusterSpec;
  readonly nodes: readonly NodeSpec[];
  readonly platforms: PlatformSettings;
  /**
   * Documents of foundation services that control planes carry (the Flux handoff); may hold secrets.
   * @default []
   */
  readonly controlPlaneDocuments?: pulumi.Input<ConfigDocument[]>;
  /**
   * What the cluster runs, which configs are generated for (talos/convergence.ts): the Kubernetes
   * version, the config contract and each existing node's installer image.
   */
  readonly running: Pick<
    Convergence,
    "kubernetesVersion" | "configContract" | "runningInstallers" | "removing"
  >;
  /** The stack's last outputs (the bootstrap guard reads them). */
  readonly lastOutputs: LastOutputs;
}

/** One node of the cluster: its machine and, for pushed configs, the apply that configures it. */
interface Member {
  readonly node: NodeSpec;
  readonly machine: TalosMachine;
  readonly apply?: talos.machine.ConfigurationApply;
}

/** Talos API addresses by node name. */
export type AddressesByName = Record<string, string>;

/**
 * A Talos cluster: machine secrets (kept forever), one machine config per node, the machines on their
 * platforms, the config pushed to nodes that take it over the Talos API, etcd bootstrapped once on the
 * first control plane, a health gate, and admin kubeconfig and talosconfig.
 */
export class TalosCluster extends pulumi.ComponentResource {
  /** The Kubernetes API URL, `https://<endpoint>:6443`. */
  public readonly endpoint: pulumi.Output<string>;
  /** Control-plane Talos API addresses by node name. */
  public readonly controlPlanes: pulumi.Output<AddressesByName>;
  /** Worker Talos API addresses by node name. */
  public readonly workers: pulumi.Output<AddressesByName>;
  /** The address each node's kubelet reports (health checks find nodes by it), by node name. */
  public readonly kubeletAddresses: pulumi.Output<AddressesByName>;
  /**
   * How `up` applied each pushed node's config (`auto`: live; `staged`: waiting for a reboot, which
   * `rollout` does node by node), by node name.
   */
  public readonly applyModes: pulumi.Output<Record<string, string>>;
  /** Admin kubeconfig (secret). */
  public readonly kubeconfig: pulumi.Output<string>;
  /** The Kubernetes API's CA certificate (PEM; public), for clients such as OpenBao's Kubernetes auth. */
  public readonly kubernetesCaCertificate: pulumi.Output<string>;
  /** talosconfig for talosctl (secret). */
  public readonly talosconfig: pulumi.Output<string>;
  /** The hash of the config last applied to each pushed node, by node name (for drift checks). */
  public readonly configHashes: pulumi.Output<Record<string, string>>;
  /** Each node's generated machine config (secret), by node name: what drift checks compare against. */
  public readonly machineConfigurations: pulumi.Output<Record<string, string>>;
  /**
   * The Image Factory installer each node runs and its config carries, by node name: the stack's
   * for a new node, else the one it was installed or last upgraded with (convergence.ts).
   */
  public readonly installerImages: pulumi.Output<Record<string, string>>;
  /** The installer the stack asks for (platform, architecture, schematic, version), by node name. */
  public readonly desiredInstallers: pulumi.Output<Record<string, string>>;
  /** The health check's result; undefined on previews or when disabled. */
  public readonly health?: pulumi.Output<talos.cluster.GetHealthResult>;
  /**
   * Recorded once etcd is bootstrapped (the cluster's Talos CA fingerprint): the stack output that keeps
   * later runs from bootstrapping it again.
   */
  public readonly etcdBootstrap: pulumi.Output<EtcdBootstrapRecord | undefined>;
  /** The machine secrets resource (protected). */
  public readonly secrets: talos.machine.Secrets;
  /** The key the API server signs service-account tokens with (secret; Workload Identity uses its public half). */
  public readonly serviceAccountSigningKey: pulumi.Output<string>;

  constructor(name: string, args: TalosClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:talos:Cluster", name, {}, opts);
    const { cluster, nodes, running } = args;

    // Lowering talosVersion on this resource would regenerate the PKI and orphan every node, so the
    // contract it was created with is kept, and deleting it needs an explicit unprotect.
    this.secrets = new talos.machine.Secrets(
      `${name}-secrets`,
      { talosVersion: running.configContract },
      {
        parent: this,
        protect: true,
        ignoreChanges: ["talosVersion"],
        additionalSecretOutputs: ["machineSecrets", "clientConfiguration"],
      },
    );
    // The CAs each node issues from and accepts, and the client credentials, under the stack's
    // rotation records (docs/day-two.md#ca-rotation); outside a rotation the machine secrets' own.
    const authorities = new CaAuthorities(name, {
      secrets: this.secrets,
      configContract: running.configContract,
      rotation: cluster.caRotation,
      parent: this,
    });
    this.serviceAccountSigningKey = pulumi.secret(
      this.secrets.machineSecrets.certs.k8sServiceaccount.key,
    );
    const client = authorities.client;
    // The cluster's identity for the bootstrap guard: the machine secrets' own CA, whatever issues now.
    const ownClient = clientCredentials(this.secrets.clientConfiguration);

    const images = new ImageCatalog(name, cluster.talosVersion, cluster.imageFactory, this);
    const machines = new MachineFactory(cluster, nodes, args.platforms, images, this);

    // One installer Output per platform and architecture, shared by its nodes.
    const installerOf = new Map<string, pulumi.Output<string>>();
    const desiredInstallers = nodes.map((node) => {
      const key = `${node.platform}/${node.architecture}`;
      let installer = installerOf.get(key);
      if (!installer) {
        installer = images.forPlatform(node.platform, node.architecture).urls.installer;
        installerOf.set(key, installer);
      }
      return installer;
    });
    // A node's config names the installer it runs: a new image reaches it through the CLI's roll.
    const installers = nodes.map((node, i) => {
      const runs = running.runningInstallers[node.name];
      return runs === undefined ? desiredInstallers[i] : pulumi.output(runs);
    });
    // What a node's config needs from its own machine's resources (an OpenStack data volume's id, by
    // which its UserVolumeConfig selects the disk): handed over by the machine once it makes them,
    // before any config is generated (nothing of the machine needs the config to make them).
    const facts = nodes.map((node) => {
      if (node.platform !== "openstack" || node.openstack.dataVolumeSize === undefined)
        return { values: pulumi.output<MachineFacts>({}) };
      const [dataVolumeId, resolve] = pulumi.deferredOutput<string>();
      const handover = { resolved: false, resolve };
      return {
        values: dataVolumeId.apply((id): MachineFacts => ({ dataVolumeId: id })),
        dataVolumeId: (id: pulumi.Output<string>) => {
          handover.resolved = true;
          resolve(id);
        },
        handover,
      };
    });
    const configs = nodes.map((node, i) => {
      const installer = installers[i];
      return pulumi.secret(
        talos.machine.getConfigurationOutput(
          {
            clusterName: cluster.name,
            clusterEndpoint: cluster.endpointUrl,
            machineSecrets: authorities.machineSecretsFor(node.name),
            machineType: node.role,
            configPatches: pulumi
              .all([
                installer,
                args.controlPlaneDocuments ?? [],
                facts[i].values,
                authorities.acceptedCasPatch(node.name),
              ])
              .apply(([image, services, known, acceptedCas]) => [
                ...machinePatches(
                  cluster,
                  node,
                  image,
                  node.role === "controlplane" ? services : [],
                  known,
                ),
                ...acceptedCas,
              ]),
            kubernetesVersion: running.kubernetesVersion,
            talosVersion: running.configContract,
            docs: false,
            examples: false,
          },
          { parent: this },
        ).machineConfiguration,
      );
    });
    // No machine is handed a config over its platform's user-data limit: every cloud machine waits
    // until all of them are known to fit (the stack-file check before this was an estimate).
    const userDataChecked = checkUserDataSizes(nodes, configs, this);

    const members: Member[] = nodes.map((node, i) => {
      const machine = machines.create({
        node,
        // Made only when read: only the platforms that take the config as user data read it.
        get machineConfiguration() {
          return pulumi.secret(
            pulumi.all([userDataChecked, configs[i]]).apply(([, config]) => config),
          );
        },
        protect: node.role === "controlplane" && cluster.protectControlPlanes,
        dataVolumeId: facts[i].dataVolumeId,
      });
      if (facts[i].handover && !facts[i].handover!.resolved)
        throw new Error(`${node.name}: its machine did not hand over its data volume's id`);
      return {
        node,
        machine,
        apply: this.pushConfig(name, cluster, node, machine, configs[i], client),
      };
    });

    const controlPlanes = members.filter((m) => m.node.role === "controlplane");
    const workers = members.filter((m) => m.node.role === "worker");
    const first = controlPlanes[0];
    const configured = (m: Member): pulumi.Resource => m.apply ?? m.machine;

    // Exactly once, on the first control plane, after its config is in place. Bootstrapping a
    // bootstrapped node hangs until timeout, so later changes (say, that node being replaced) are
    // ignored, and unlike the config push it is not replaced with the machine (no replaceWith).
    // The engine creates it again when the state lost it or its URN changed; the guard's hook refuses
    // that once the stack's outputs record the bootstrap (bootstrapGuard.ts). Its URN is pinned by a
    // test: a rename or a new parent needs an alias to the old one.
    const bootstrapName = `${name}-bootstrap`;
    const guard = new BootstrapGuard(name, {
      resource: bootstrapName,
      node: first.node.name,
      caCertificate: ownClient.caCertificate,
      lastOutputs: args.lastOutputs,
    });
    const bootstrap = new talos.machine.Bootstrap(
      bootstrapName,
      {
        node: first.machine.talosAddress,
        clientConfiguration: client,
        timeouts: { create: "10m" },
      },
      {
        parent: this,
        dependsOn: [configured(first)],
        ignoreChanges: ["node", "endpoint", "clientConfiguration", "timeouts"],
        hooks: { beforeCreate: [guard.hook] },
      },
    );
    this.etcdBootstrap = guard.record(bootstrap);

    const cpAddresses = controlPlanes.map((m) => m.machine.talosAddress);
    const workerAddresses = workers.map((m) => m.machine.talosAddress);

    // Only on `up`: a preview must work while the cluster is down. Talos' check finds each node in
    // Kubernetes by the IPs given ("can't find expected node with IPs") and reaches it from the
    // endpoints' control plane there: the kubelet's addresses; the workstation reaches the endpoints.
    // A run that deletes nodes skips it: Kubernetes lists them until their machines are gone
    // ("unexpected nodes"); `platform up` checks after the run (components/talos/convergence.ts).
    if (cluster.health.enabled && !pulumi.runtime.isDryRun() && running.removing.length === 0) {
      this.health = talos.cluster.getHealthOutput(
        {
          clientConfiguration: client,
          controlPlaneNodes: controlPlanes.map((m) => m.machine.kubeletAddress),
          workerNodes: workers.map((m) => m.machine.kubeletAddress),
          endpoints: cpAddresses,
          // With a CNI the program does not install (Cilium, or none) nodes may stay NotReady until it
          // arrives: check Talos and etcd only.
          skipKubernetesChecks: cluster.network.cni !== "flannel",
          timeouts: { read: cluster.health.timeout },
        },
        { parent: this, dependsOn: [bootstrap, ...members.map(configured)] },
      );
    }

    // A rotated Kubernetes CA needs a kubeconfig from it: fetched again (a new resource) once the new
    // CA issues; the one of the old CA leaves the state (deleting it touches no node).
    const kubeconfigName =
      authorities.kubeconfigGeneration === 0
        ? `${name}-kubeconfig`
        : `${name}-kubeconfig-${authorities.kubeconfigGeneration}`;
    const kubeconfig = new talos.cluster.Kubeconfig(
      kubeconfigName,
      {
        clientConfiguration: client,
        // The provider regenerates the admin client certificate (valid 365 days) on any run whose
        // plan finds it expiring within this window (its ModifyPlan; default 720h). 90 days leaves
        // the 60 days between this window and `certs`' 30-day alarm for an ordinary `up` to renew it.
        certificateRenewalDuration: KUBECONFIG_RENEWAL,
        // Fetched only once the health gate passed, when there is one.
        node: this.health
          ? pulumi.all([this.health, first.machine.talosAddress]).apply(([, address]) => address)
          : first.machine.talosAddress,
      },
      { parent: this, dependsOn: [bootstrap] },
    );

    this.endpoint = pulumi.output(cluster.endpointUrl);
    this.controlPlanes = addressesByName(controlPlanes);
    this.workers = addressesByName(workers);
    this.kubeletAddresses = pulumi
      .all(members.map((m) => pulumi.all([m.node.name, m.machine.kubeletAddress])))
      .apply((pairs) => Object.fromEntries(pairs));
    this.applyModes = pulumi
      .all(
        members
          .filter((m) => m.apply)
          .map((m) => pulumi.all([m.node.name, m.apply!.resolvedApplyMode])),
      )
      .apply((pairs) => Object.fromEntries(pairs));
    this.kubeconfig = pulumi.secret(kubeconfig.kubeconfigRaw);
    // A CA certificate is public; unsecret it so the app layer can read it without the kubeconfig.
    this.kubernetesCaCertificate = pulumi.unsecret(
      kubeconfig.kubernetesClientConfiguration.caCertificate.apply(pemFromProvider),
    );
    this.talosconfig = pulumi.secret(
      talos.client.getConfigurationOutput(
        {
          clusterName: cluster.name,
          clientConfiguration: client,
          endpoints: cpAddresses,
          nodes: [...cpAddresses, ...workerAddresses],
        },
        { parent: this },
      ).talosConfig,
    );
    const pushed = members.filter((m) => m.apply);
    this.configHashes = pulumi
      .all(pushed.map((m) => m.apply!.machineConfigurationHash))
      .apply((hashes) => Object.fromEntries(hashes.map((hash, i) => [pushed[i].node.name, hash])));
    const byNodeName = (values: pulumi.Output<string>[]) =>
      pulumi
        .all(values)
        .apply((list) => Object.fromEntries(list.map((v, i) => [nodes[i].name, v])));
    this.machineConfigurations = pulumi.secret(byNodeName(configs));
    this.installerImages = byNodeName(installers);
    this.desiredInstallers = byNodeName(desiredInstallers);

    this.registerOutputs({
      endpoint: this.endpoint,
      controlPlanes: this.controlPlanes,
      workers: this.workers,
      kubeletAddresses: this.kubeletAddresses,
      applyModes: this.applyModes,
      kubeconfig: this.kubeconfig,
      kubernetesCaCertificate: this.kubernetesCaCertificate,
      talosconfig: this.talosconfig,
      configHashes: this.configHashes,
      machineConfigurations: this.machineConfigurations,
      installerImages: this.installerImages,
      desiredInstallers: this.desiredInstallers,
      etcdBootstrap: this.etcdBootstrap,
      health: this.health,
    });
  }

  /**
   * Pushes a node's config to its Talos API when the node takes it that way: always for pushed
   * nodes (first install included), and for user-data nodes the later changes, when reachable.
   *
   * Every node's apply is independent of the others' (first creation stays parallel), and none may
   * reboot a running node: `cluster.applyMode` (default `staged_if_needing_reboot`, validated) stages
   * a change that needs a reboot, and `rollout` reboots staged nodes one at a time. On a new node in
   * maintenance mode every mode but `staged` applies at once (Talos turns auto and reboot into
   * no-reboot there), which is why `staged` is refused.
   */
  private pushConfig(
    name: string,
    cluster: ClusterSpec,
    node: NodeSpec,
    machine: TalosMachine,
    machineConfiguration: pulumi.Output<string>,
    client: ClientCredentials,
  ): talos.machine.ConfigurationApply | undefined {
    const delivery = machine.delivery;
    let onDestroy: OnDestroyAction | undefined;
    let installAddress: string | undefined;
    switch (delivery.kind) {
      case "userData":
        if (!delivery.pushChanges) return undefined;
        break;
      case "push":
        onDestroy = delivery.onDestroy;
        installAddress = delivery.installAddress;
        break;
      default: {
        const unhandled: never = delivery;
        throw new Error(`unknown delivery ${JSON.stringify(unhandled)}`);
      }
    }
    // A new machine (a replaced VM or instance) has none of the old one's config: the pushes are
    // replaced with it, so the new machine gets its config. Without a machine resource (bare
    // metal) nothing is replaced.
    const replaceWith = machine.machineResource ? [machine.machineResource] : undefined;
    // A node whose maintenance-mode address is not its configured one gets its first config there,
    // once: later changes to this resource are ignored, and every later push (and the health check,
    // and talosconfig) uses the configured address.
    const install =
      installAddress === undefined
        ? undefined
        : new talos.machine.ConfigurationApply(
            `${name}-${node.name}-install`,
            {
              node: installAddress,
              clientConfiguration: client,
              machineConfigurationInput: machineConfiguration,
              // In maintenance mode no_reboot applies at once; on a running node it never reboots.
              applyMode: "no_reboot",
              timeouts: { create: "10m" },
            },
            {
              parent: this,
              dependsOn: [machine],
              replaceWith,
              ignoreChanges: [
                "node",
                "endpoint",
                "clientConfiguration",
                "machineConfigurationInput",
                "applyMode",
                "timeouts",
              ],
            },
          );
    return new talos.machine.ConfigurationApply(
      `${name}-${node.name}-config`,
      {
        node: machine.talosAddress,
        clientConfiguration: client,
        machineConfigurationInput: machineConfiguration,
        applyMode: cluster.applyMode,
        ...(onDestroy ? { onDestroy } : {}),
        // After an install push the node installs and reboots before it answers at its address.
        timeouts: { create: install ? "30m" : "10m", update: "10m", delete: "5m" },
      },
      {
        parent: this,
        dependsOn: install ? [install] : [machine],
        replaceWith,
        // Removing a control plane whose removal resets it must be a deliberate act.
        protect:
          node.role === "controlplane" && cluster.protectControlPlanes && onDestroy?.reset === true,
      },
    );
  }
}

function addressesByName(members: readonly Member[]): pulumi.Output<AddressesByName> {
  return pulumi
    .all(members.map((m) => m.machine.talosAddress))
    .apply((addresses) =>
      Object.fromEntries(addresses.map((address, i) => [members[i].node.name, address])),
    );
}

/** The provider returns certificates base64-encoded; PEM passes through unchanged. */
function pemFromProvider(value: string): string {
  return value.startsWith("-----BEGIN") ? value : Buffer.from(value, "base64").toString("utf8");
}
