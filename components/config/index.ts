// Kept only for test/automation/startup.test.ts, which imports StackConfigError from here; once it
// imports ./problems instead, this file goes.
export { StackConfigError } from "./problems";
