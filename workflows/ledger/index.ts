// Workflow types of the ledger service.
export {};
