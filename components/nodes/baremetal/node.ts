import * as pulumi from "@pulumi/pulumi";
import type { BaremetalNodeSpec } from "../../spec/types";
import type { ConfigDelivery, TalosMachine } from "../machine";

/** Inputs of a {@link BareMetalNode}. */
export interface BareMetalNodeArgs {
  readonly node: BaremetalNodeSpec;
}

/**
 * A machine the operator booted into Talos maintenance mode (USB or PXE). Nothing is created for the
 * machine itself: its config is pushed (first to `baremetal.maintenanceAddress` when the node has a
 * different address in maintenance mode, then always to `baremetal.address`), and removing it from
 * the stack resets it (gracefully leaving etcd first) unless `baremetal.resetOnDestroy` is false.
 */
export class BareMetalNode extends pulumi.ComponentResource implements TalosMachine {
  public readonly talosAddress: string;
  public readonly kubeletAddress: string;
  public readonly delivery: ConfigDelivery;

  constructor(name: string, args: BareMetalNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:baremetal:Node", name, {}, opts);
    const { baremetal } = args.node;
    this.talosAddress = baremetal.address;
    this.kubeletAddress = args.node.kubeletAddresses[0] ?? baremetal.address;
    this.delivery = {
      kind: "push",
      onDestroy: baremetal.resetOnDestroy
        ? { graceful: true, reboot: true, reset: true }
        : undefined,
      ...(baremetal.maintenanceAddress ? { installAddress: baremetal.maintenanceAddress } : {}),
    };
    this.registerOutputs({ address: this.talosAddress });
  }
}
