import * as pulumi from "@pulumi/pulumi";
import * as utilities from "../utilities";

/** Inputs of `talos.imagefactory.Schematic`. */
export interface SchematicArgs {
  /** The schematic YAML (system extensions, kernel args); empty for the vanilla image. */
  schematic?: pulumi.Input<string>;
}

/** Stored state of `talos.imagefactory.Schematic`. */
export type SchematicState = SchematicArgs;

/** Registers a schematic with the Talos Image Factory; the schematic ID is the resource `id`. */
export class Schematic extends pulumi.CustomResource {
  /** @internal */
  public static readonly __pulumiType = "talos:imageFactory/schematic:Schematic";

  /** Reads an existing Schematic's state. */
  public static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    state?: SchematicState,
    opts?: pulumi.CustomResourceOptions,
  ): Schematic {
    return new Schematic(name, state, { ...opts, id });
  }

  /** True when `obj` is a Schematic, across copies of this package. */
  public static isInstance(obj: unknown): obj is Schematic {
    return (
      pulumi.CustomResource.isInstance(obj) && (obj as any).__pulumiType === Schematic.__pulumiType
    );
  }

  declare readonly schematic: pulumi.Output<string | undefined>;

  constructor(name: string, args?: SchematicArgs, opts?: pulumi.CustomResourceOptions) {
    const inputs: pulumi.Inputs = { schematic: args?.schematic };
    super(Schematic.__pulumiType, name, inputs, utilities.withDefaults(opts));
  }
}
