import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, NodeSpec, OciSpec, OpenstackSpec, ProxmoxSpec } from "../spec/types";
import { hasGuestAgent, ImageCatalog } from "../talos/imageFactory";
import { BareMetalNode } from "./baremetal/node";
import type { MachineRequest, TalosMachine } from "./machine";
import { OciNode } from "./oci/node";
import { OciPlatform } from "./oci/platform";
import { OpenstackNode } from "./openstack/node";
import { OpenstackPlatform } from "./openstack/platform";
import { ProxmoxNode } from "./proxmox/node";
import { ProxmoxPlatform } from "./proxmox/platform";

/** Per-platform connection settings; a platform is only touched when a node runs on it. */
export interface PlatformSettings {
  readonly proxmox?: {
    readonly settings: ProxmoxSpec;
    readonly apiToken?: pulumi.Output<string>;
    /** The SSH key for proxmox.ssh without the agent (secret). */
    readonly sshPrivateKey?: pulumi.Output<string>;
  };
  readonly oci?: OciSpec;
  readonly openstack?: OpenstackSpec;
  /** The OCI API signing key (secret); else the provider's own sources. */
  readonly ociPrivateKey?: pulumi.Output<string>;
  /** The OpenStack application credential secret; else the provider's own sources. */
  readonly openstackApplicationCredentialSecret?: pulumi.Output<string>;
}

function required<T>(value: T | undefined, platform: string): T {
  if (value === undefined) {
    throw new Error(
      `${platform} settings are required for ${platform} nodes (validation should have caught this)`,
    );
  }
  return value;
}

/** Creates each node's machine on its platform, and each platform's shared resources once. */
export class MachineFactory {
  private proxmox?: ProxmoxPlatform;
  private oci?: OciPlatform;
  private openstack?: OpenstackPlatform;

  constructor(
    private readonly cluster: ClusterSpec,
    private readonly nodes: readonly NodeSpec[],
    private readonly settings: PlatformSettings,
    private readonly images: ImageCatalog,
    private readonly parent: pulumi.Resource,
  ) {}

  /** The machine for one node, named `<cluster>-<node>`. */
  create(request: MachineRequest): TalosMachine {
    // machineConfiguration is read only by the platforms that need it (it is made when read).
    const { node, protect } = request;
    const name = `${this.cluster.name}-${node.name}`;
    const clusterName = this.cluster.name;
    const opts = { parent: this.parent };
    switch (node.platform) {
      case "proxmox":
        return new ProxmoxNode(
          name,
          {
            node,
            platform: this.proxmoxPlatform(),
            guestAgent: hasGuestAgent(this.cluster.imageFactory, "proxmox"),
            clusterName,
            protect,
          },
          opts,
        );
      case "baremetal":
        return new BareMetalNode(name, { node }, opts);
      case "oci":
        return new OciNode(
          name,
          {
            node,
            settings: required(this.settings.oci, "oci"),
            platform: this.ociPlatform(),
            machineConfiguration: request.machineConfiguration,
            clusterName,
            protect,
          },
          opts,
        );
      case "openstack":
        return new OpenstackNode(
          name,
          {
            node,
            settings: required(this.settings.openstack, "openstack"),
            platform: this.openstackPlatform(),
            machineConfiguration: request.machineConfiguration,
            dataVolumeId: request.dataVolumeId,
            clusterName,
            vip: this.cluster.vip,
            protect,
          },
          opts,
        );
      default: {
        const unhandled: never = node;
        throw new Error(`no machine factory for ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private proxmoxPlatform(): ProxmoxPlatform {
    const proxmox = required(this.settings.proxmox, "proxmox");
    this.proxmox ??= new ProxmoxPlatform(
      `${this.cluster.name}-proxmox`,
      {
        settings: proxmox.settings,
        apiToken: proxmox.apiToken,
        sshPrivateKey: proxmox.sshPrivateKey,
        clusterName: this.cluster.name,
        talosVersion: this.cluster.talosVersion,
        image: this.images.forPlatform("proxmox"),
      },
      { parent: this.parent },
    );
    return this.proxmox;
  }

  private ociPlatform(): OciPlatform {
    const settings = required(this.settings.oci, "oci");
    const shapes = [
      ...new Set(this.nodes.flatMap((n) => (n.platform === "oci" ? [n.oci.shape] : []))),
    ];
    const hereSites = new Set(this.nodes.filter((n) => n.platform === "oci").map((n) => n.site));
    this.oci ??= new OciPlatform(
      `${this.cluster.name}-oci`,
      {
        settings,
        clusterName: this.cluster.name,
        talosVersion: this.cluster.talosVersion,
        shapes,
        privateKey: this.settings.ociPrivateKey,
        network: this.cluster.network,
        otherSites: Object.values(this.cluster.sites).filter((site) => !hereSites.has(site.name)),
        controlPlanesHere: this.nodes.some(
          (n) => n.platform === "oci" && n.role === "controlplane",
        ),
      },
      { parent: this.parent },
    );
    return this.oci;
  }

  private openstackPlatform(): OpenstackPlatform {
    const settings = required(this.settings.openstack, "openstack");
    const controlPlaneHere = this.nodes.some(
      (n) => n.platform === "openstack" && n.role === "controlplane",
    );
    const hereSites = new Set(
      this.nodes.filter((n) => n.platform === "openstack").map((n) => n.site),
    );
    const otherSites = Object.values(this.cluster.sites).filter(
      (site) => !hereSites.has(site.name),
    );
    this.openstack ??= new OpenstackPlatform(
      `${this.cluster.name}-openstack`,
      {
        settings,
        clusterName: this.cluster.name,
        talosVersion: this.cluster.talosVersion,
        image: this.images.forPlatform("openstack"),
        vip: controlPlaneHere ? this.cluster.vip : undefined,
        network: this.cluster.network,
        otherSites,
        controlPlanesHere: controlPlaneHere,
        applicationCredentialSecret: this.settings.openstackApplicationCredentialSecret,
      },
      { parent: this.parent },
    );
    return this.openstack;
  }
}
