import * as pulumi from "@pulumi/pulumi";
import * as outputs from "../types/output";
import * as utilities from "../utilities";

const TOKEN = "talos:imageFactory/getUrls:getUrls";

/** Arguments of `getUrls` (plain values). */
export interface GetUrlsArgs {
  /** `amd64` (default) or `arm64`. */
  architecture?: string;
  /** `metal`, `nocloud`, `oracle`, `openstack`, … */
  platform?: string;
  /** A single-board computer name, instead of `platform`. */
  sbc?: string;
  schematicId: string;
  talosVersion: string;
}

/** Arguments of `getUrlsOutput` (inputs). */
export interface GetUrlsOutputArgs {
  architecture?: pulumi.Input<string>;
  platform?: pulumi.Input<string>;
  sbc?: pulumi.Input<string>;
  schematicId: pulumi.Input<string>;
  talosVersion: pulumi.Input<string>;
}

/** Image Factory URLs for a schematic, version and platform. */
export interface GetUrlsResult {
  readonly architecture: string;
  readonly id: string;
  readonly platform?: string;
  readonly sbc?: string;
  readonly schematicId: string;
  readonly talosVersion: string;
  readonly urls: outputs.imagefactory.GetUrlsUrls;
}

function invokeArgs(args: GetUrlsArgs | GetUrlsOutputArgs): pulumi.Inputs {
  return {
    architecture: args.architecture,
    platform: args.platform,
    sbc: args.sbc,
    schematicId: args.schematicId,
    talosVersion: args.talosVersion,
  };
}

/** Computes installer and disk-image URLs. */
export function getUrls(args: GetUrlsArgs, opts?: pulumi.InvokeOptions): Promise<GetUrlsResult> {
  return utilities.invoke(TOKEN, invokeArgs(args), opts);
}

/** Computes installer and disk-image URLs, from inputs. */
export function getUrlsOutput(
  args: GetUrlsOutputArgs,
  opts?: pulumi.InvokeOutputOptions,
): pulumi.Output<GetUrlsResult> {
  return utilities.invokeOutput(TOKEN, invokeArgs(args), opts);
}
