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

/**
 * The endpoint's values by record type; a type with no values gets no record. `unresolved` are
 * addresses known only once their resource exists (a cloud node without a declared address): each
 * joins the record of its own family, A or AAAA, when it is known.
 */
export interface EndpointRecords {
  readonly A: pulumi.Input<string>[];
  readonly AAAA: pulumi.Input<string>[];
  readonly unresolved?: pulumi.Input<string>[];
}

/** Sorts addresses into A and AAAA values; addresses known only later (cloud nodes) stay unresolved. */
export function endpointRecords(addresses: readonly pulumi.Input<string>[]): EndpointRecords {
  return {
    A: addresses.filter((a): a is string => typeof a === "string" && ipFamily(a) === 4),
    AAAA: addresses.filter((a): a is string => typeof a === "string" && ipFamily(a) === 6),
    unresolved: addresses.filter((a) => typeof a !== "string"),
  };
}

const RECORD_FAMILY = { A: 4, AAAA: 6 } as const;

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
      const endpointName = settings.endpointName;
      const unresolved = args.endpointRecords.unresolved ?? [];
      for (const type of ["A", "AAAA"] as const) {
        const known = args.endpointRecords[type];
        const resourceName = `${name}-endpoint-${type.toLowerCase()}`;
        const ofFamily = (values: string[]) =>
          values.filter((v) => ipFamily(v) === RECORD_FAMILY[type]);
        if (known.length > 0) {
          // The record exists whatever the later addresses turn out to be; those of its family join it.
          const values =
            unresolved.length === 0
              ? known
              : pulumi.all([...known, ...unresolved]).apply((all) => ofFamily(all));
          record(resourceName, endpointName, type, values);
        } else if (unresolved.length > 0) {
          // Only later addresses could need this type: the record is created once they are known,
          // and only when one of them is of its family (an IPv6 first fixed IP gets AAAA, not A).
          pulumi.all(unresolved).apply((all) => {
            const values = ofFamily(all);
            if (values.length > 0) record(resourceName, endpointName, type, values);
          });
        }
      }
      names.push(endpointName);
    }
    settings.records.forEach((r, i) => {
      record(`${name}-record-${i}`, r.name, r.type, [...r.values]);
      names.push(r.name);
    });
    this.names = pulumi.output(names);
    this.registerOutputs({ names: this.names });
  }
}
