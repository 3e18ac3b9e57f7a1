//! Checking schemas: lints and their allowances, the declared form, DynamoDB
//! fit, projects, scalars and the vocabulary; one module each, in one test
//! binary.

mod allow;
mod declare;
mod dynamo_lint;
mod project;
mod scalars;
mod vocabulary;
