import * as proxmoxve from "@muhlba91/pulumi-proxmoxve";
import * as pulumi from "@pulumi/pulumi";
import type { ProxmoxNodeSpec } from "../../spec/types";
import { parseCidr } from "../../net";
import type { ConfigDelivery, TalosMachine } from "../machine";
import type { ProxmoxPlatform } from "./platform";

/** Inputs of a {@link ProxmoxNode}. */
export interface ProxmoxNodeArgs {
  readonly node: ProxmoxNodeSpec;
  readonly platform: ProxmoxPlatform;

  /** Enable the QEMU guest agent channel (only when the image carries the extension). */
  readonly guestAgent: boolean;
  readonly clusterName: string;
  /** Protect the VM from deletion. */
  readonly protect: boolean;
}

/**
 * The VM's cloud-init network settings: its first IPv4 and first IPv6 address with their gateways, so
 * the nocloud image comes up in maintenance mode at the address the config is pushed to.
 */
function cloudInitIpConfig(node: ProxmoxNodeSpec): {
  ipv4?: { address: string; gateway?: string };
  ipv6?: { address: string; gateway?: string };
} {
  const ipv4 = node.network.addresses.find((a) => parseCidr(a)?.family === 4);
  const ipv6 = node.network.addresses.find((a) => parseCidr(a)?.family === 6);
  return {
    ...(ipv4
      ? {
          ipv4: {
            address: ipv4,
            ...(node.network.gateway ? { gateway: node.network.gateway } : {}),
          },
        }
      : {}),
    ...(ipv6
      ? {
          ipv6: {
            address: ipv6,
            ...(node.network.gateway6 ? { gateway: node.network.gateway6 } : {}),
          },
        }
      : {}),
  };
}

/**
 * A Talos node as a Proxmox VM, booted from the nocloud image with its static address from cloud-init.
 * Its disk is created from the image through the API (`importFrom`), or over SSH (`fileId`) for the
 * compressed formats.
 * The machine config is pushed to that address, so no secret ever lands on Proxmox storage, and a
 * config change never touches the VM. The boot image is ignored after creation: upgrades go through
 * the Talos API, never through a new disk.
 */
export class ProxmoxNode extends pulumi.ComponentResource implements TalosMachine {
  public readonly talosAddress: string;
  public readonly kubeletAddress: string;
  public readonly delivery: ConfigDelivery = { kind: "push" };
  /** The VM. */
  public readonly vm: proxmoxve.VmLegacy;
  public readonly machineResource: proxmoxve.VmLegacy;

  constructor(name: string, args: ProxmoxNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:proxmox:Node", name, {}, opts);
    const { node, platform } = args;
    const vm = node.proxmox;
    this.talosAddress = node.talosAddress;
    this.kubeletAddress = node.kubeletAddresses[0] ?? node.talosAddress;
    const image = platform.imageOn(vm.host);
    const nameservers = node.resolvers.nameservers;
    this.vm = new proxmoxve.VmLegacy(
      `${name}-vm`,
      {
        nodeName: vm.host,
        vmId: vm.vmId,
        name: node.name,
        description: `Talos ${node.role} of cluster ${args.clusterName}; managed by Pulumi (talos-platform).`,
        tags: ["talos", args.clusterName, node.role],
        onBoot: true,
        started: true,
        // The provider would restart the VM after a change it counts as needing one (CPU, memory,
        // the agent, cloud-init), every VM of a run at once. Off, a CPU, memory or agent change
        // waits, pending, for a restart of that VM from Proxmox, one node at a time
        // (docs/platforms.md); a change that needs the VM off (a datastore move) fails instead.
        rebootAfterUpdate: false,
        stopOnDestroy: true,
        machine: "q35",
        scsiHardware: "virtio-scsi-single",
        operatingSystem: { type: "l26" },
        agent: { enabled: args.guestAgent },
        cpu: { cores: vm.cores, type: vm.cpuType },
        memory: { dedicated: vm.memory },
        disks: [
          {
            interface: "scsi0",
            datastoreId: vm.datastore,
            // import content through the API; an iso-content image (SSH formats) by `qm disk import`.
            [platform.imageFormat.diskAttribute]: image.id,
            fileFormat: "raw",
            size: vm.diskSize,
            discard: "on",
            ssd: true,
            iothread: true,
          },
        ],
        networkDevices: [
          {
            bridge: vm.bridge,
            macAddress: node.network.mac.toUpperCase(),
            model: "virtio",
            ...(vm.vlan !== undefined ? { vlanId: vm.vlan } : {}),
            ...(node.network.mtu !== undefined ? { mtu: node.network.mtu } : {}),
          },
        ],
        initialization: {
          datastoreId: vm.datastore,
          type: "nocloud",
          ipConfigs: [cloudInitIpConfig(node)],
          ...(nameservers.length > 0 ? { dns: { servers: [...nameservers] } } : {}),
        },
      },
      {
        parent: this,
        provider: platform.provider,
        protect: args.protect,
        // A new Talos version (or image format) downloads a new image; the VM keeps its disk and is
        // upgraded in place. Both attributes, so a VM created through either path never diffs.
        ignoreChanges: ["disks[0].fileId", "disks[0].importFrom"],
        // A replacement (new host or VM ID) cannot run beside the old VM: it would have the same
        // MAC and static IP on the same network, and with an unchanged VM ID Proxmox refuses it
        // (VM IDs are unique in the Proxmox cluster).
        deleteBeforeReplace: true,
      },
    );
    this.machineResource = this.vm;
    this.registerOutputs({ vmId: this.vm.vmId });
  }
}
