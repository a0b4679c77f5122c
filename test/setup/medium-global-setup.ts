/** Replaced by the persistence work: creates the migrated template database medium tests clone. */
export default async function setup(): Promise<void> {}
