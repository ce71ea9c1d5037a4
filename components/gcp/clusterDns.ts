import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { DnsSpec } from "../spec/types";
import { ipFamily } from "../net";

/** Inputs of a {@link ClusterDns}. */
export interface ClusterDnsArgs {
  readonly settings: DnsSpec;
  readonly project: string;
  /** Where the API endpoint's name points (the VIP, or the control planes), by record type. */
  readonly endpointRecords: EndpointRecords;
  readonly provider: gcp.Provider;
}

/** The endpoint's values by record type; a type with no values gets no record. */
export interface EndpointRecords {
  readonly A: pulumi.Input<string>[];
  readonly AAAA: pulumi.Input<string>[];
}

/** Sorts addresses into A and AAAA values; addresses known only later (cloud nodes) count as IPv4. */
export function endpointRecords(addresses: readonly pulumi.Input<string>[]): EndpointRecords {
  return {
    A: addresses.filter((a) => typeof a !== "string" || ipFamily(a) === 4),
    AAAA: addresses.filter((a): a is string => typeof a === "string" && ipFamily(a) === 6),
  };
}

/**
 * Records in an existing Cloud DNS managed zone: the Kubernetes API endpoint's A/AAAA records (the name
 * is also in every node's certSANs) and any further names the stack declares.
 */
export class ClusterDns extends pulumi.ComponentResource {
  /** Names created, fully qualified. */
  public readonly names: pulumi.Output<string[]>;

  constructor(name: string, args: ClusterDnsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:gcp:ClusterDns", name, {}, opts);
    const { settings } = args;
    const record = (
      resourceName: string,
      dnsName: string,
      type: string,
      values: pulumi.Input<pulumi.Input<string>[]>,
    ) =>
      new gcp.dns.RecordSet(
        resourceName,
        {
          managedZone: settings.zone,
          project: args.project,
          name: dnsName,
          type,
          ttl: settings.ttl,
          rrdatas: values,
        },
        { parent: this, provider: args.provider },
      );

    const names: string[] = [];
    if (settings.endpointName) {
      for (const type of ["A", "AAAA"] as const) {
        const values = args.endpointRecords[type];
        if (values.length > 0)
          record(`${name}-endpoint-${type.toLowerCase()}`, settings.endpointName, type, values);
      }
      names.push(settings.endpointName);
    }
    settings.records.forEach((r, i) => {
      record(`${name}-record-${i}`, r.name, r.type, [...r.values]);
      names.push(r.name);
    });
    this.names = pulumi.output(names);
    this.registerOutputs({ names: this.names });
  }
}
