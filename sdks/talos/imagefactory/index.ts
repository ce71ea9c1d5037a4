export {
  getUrls,
  getUrlsOutput,
  type GetUrlsArgs,
  type GetUrlsOutputArgs,
  type GetUrlsResult,
} from "./getUrls";
export { Schematic, type SchematicArgs, type SchematicState } from "./schematic";
