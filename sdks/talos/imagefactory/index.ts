export { getUrls, getUrlsOutput, GetUrlsArgs, GetUrlsOutputArgs, GetUrlsResult } from "./getUrls";
export { Schematic, SchematicArgs, SchematicState } from "./schematic";
