// What every rule of a foundation stack file looks at (built by parse.ts), and the shape of a rule.
// The input holds whatever parsed, so each rule checks what it can even when another section is broken.
import type { z } from "zod";
import type { KeyPath, Problems } from "../problems";
import type {
  RawCluster,
  RawDns,
  RawFlux,
  RawEtcdBackups,
  RawGcp,
  RawNode,
  RawOci,
  RawOpenbao,
  RawOpenstack,
  RawProxmox,
} from "../schema";

/** A node that passed the schema, with its index in the stack file's list. */
export interface IndexedNode {
  readonly index: number;
  readonly node: RawNode;
}

/** What a schema refused: a required section left out, or a section's or a node's issues. */
export type SchemaProblem =
  | { readonly kind: "missing"; readonly key: string }
  | {
      readonly kind: "invalid";
      readonly key: KeyPath;
      /** The value as written, for the `got` of each issue. */
      readonly value: unknown;
      readonly issues: readonly z.core.$ZodIssue[];
    };

/** A parsed foundation stack file: every section that parsed, and what the schemas refused. */
export interface RuleInput {
  /** The project (config namespace), for messages. */
  readonly project: string;
  /** The stack file, for the commands a message suggests. */
  readonly stackFile: string;
  readonly cluster?: RawCluster;
  readonly proxmox?: RawProxmox;
  readonly oci?: RawOci;
  readonly openstack?: RawOpenstack;
  readonly gcp?: RawGcp;
  readonly openbao?: RawOpenbao;
  readonly dns?: RawDns;
  readonly flux?: RawFlux;
  readonly etcdBackups?: RawEtcdBackups;
  /** Platform settings keys present in the stack file (parsed or not). */
  readonly platformsGiven: ReadonlySet<string>;
  /** Service keys present in the stack file (parsed or not): gcp, openbao, dns, flux. */
  readonly servicesGiven: ReadonlySet<string>;
  /** Secret config keys set on the stack (values never read here). */
  readonly secretKeys: ReadonlySet<string>;
  /** Every key set in the namespace, secret or not. */
  readonly presentKeys: ReadonlySet<string>;
  /** The nodes that passed their schema. */
  readonly nodes: readonly IndexedNode[];
  /** Every entry of the node list, parsed or not, for counts. */
  readonly rawNodes: readonly unknown[];
  /** The values as read, for rules that look past a section that did not parse. */
  readonly raw: Readonly<Record<string, unknown>>;
  /** What the sections' schemas refused, in stack-file order. */
  readonly schemaProblems: readonly SchemaProblem[];
}

/** A rule: records the problems it finds, never throws. */
export type Rule = (input: RuleInput, problems: Problems) => void;
