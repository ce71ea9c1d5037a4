import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, ProxmoxSpec } from "../config/types";
import { hasGuestAgent, ImageCatalog } from "../talos/imageFactory";
import { BareMetalNode } from "./baremetal/node";
import type { MachineRequest, TalosMachine } from "./machine";
import { ProxmoxNode } from "./proxmox/node";
import { ProxmoxPlatform } from "./proxmox/platform";

/** Per-platform connection settings; a platform is only touched when a node runs on it. */
export interface PlatformSettings {
  readonly proxmox?: { readonly settings: ProxmoxSpec; readonly apiToken?: pulumi.Output<string> };
}

/** Creates each node's machine on its platform, and each platform's shared resources once. */
export class MachineFactory {
  private proxmox?: ProxmoxPlatform;

  constructor(
    private readonly cluster: ClusterSpec,
    private readonly settings: PlatformSettings,
    private readonly images: ImageCatalog,
    private readonly parent: pulumi.Resource,
  ) {}

  /** The machine for one node, named `<cluster>-<node>`. */
  create(request: MachineRequest): TalosMachine {
    const { node } = request;
    const name = `${this.cluster.name}-${node.name}`;
    const opts = { parent: this.parent };
    switch (node.platform) {
      case "proxmox":
        return new ProxmoxNode(
          name,
          {
            node,
            platform: this.proxmoxPlatform(),
            nameservers: this.cluster.network.nameservers,
            guestAgent: hasGuestAgent(this.cluster.imageFactory, "proxmox"),
            clusterName: this.cluster.name,
            protect: request.protect,
          },
          opts,
        );
      case "baremetal":
        return new BareMetalNode(name, { node }, opts);
      default: {
        const unhandled: never = node;
        throw new Error(`no machine factory for ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private proxmoxPlatform(): ProxmoxPlatform {
    if (!this.proxmox) {
      const proxmox = this.settings.proxmox;
      if (!proxmox)
        throw new Error(
          "proxmox settings are required for Proxmox nodes (validation should have caught this)",
        );
      this.proxmox = new ProxmoxPlatform(
        `${this.cluster.name}-proxmox`,
        {
          settings: proxmox.settings,
          apiToken: proxmox.apiToken,
          clusterName: this.cluster.name,
          talosVersion: this.cluster.talosVersion,
          image: this.images.forPlatform("proxmox"),
        },
        { parent: this.parent },
      );
    }
    return this.proxmox;
  }
}
