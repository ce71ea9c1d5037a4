import * as pulumi from "@pulumi/pulumi";
import type { BaremetalNodeSpec } from "../../config/types";
import type { ConfigDelivery, TalosMachine } from "../machine";

/** Inputs of a {@link BareMetalNode}. */
export interface BareMetalNodeArgs {
  readonly node: BaremetalNodeSpec;
}

/**
 * A machine the operator booted into Talos maintenance mode (USB or PXE). Nothing is created for the
 * machine itself: its config is pushed to its address, and removing it from the stack resets it
 * (gracefully leaving etcd first) unless `baremetal.resetOnDestroy` is false.
 */
export class BareMetalNode extends pulumi.ComponentResource implements TalosMachine {
  public readonly talosAddress: string;
  public readonly delivery: ConfigDelivery;

  constructor(name: string, args: BareMetalNodeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:baremetal:Node", name, {}, opts);
    this.talosAddress = args.node.baremetal.address;
    this.delivery = {
      kind: "push",
      onDestroy: args.node.baremetal.resetOnDestroy
        ? { graceful: true, reboot: true, reset: true }
        : undefined,
    };
    this.registerOutputs({ address: this.talosAddress });
  }
}
