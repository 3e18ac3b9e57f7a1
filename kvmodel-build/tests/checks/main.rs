//! Checking schemas: lints and their allowances, the declared form, DynamoDB
//! fit, projects, scalars and the vocabulary; and checking the workspace's
//! own sources for import cycles between modules (`layers`) and for the
//! runtime's public modules (`surface`); one module each, in one test
//! binary.

mod allow;
mod declare;
mod dynamo_lint;
mod layers;
mod project;
mod scalars;
mod surface;
mod vocabulary;
