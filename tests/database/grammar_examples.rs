//! Every example statement in `grammar/ecsql.ebnf` and every ```sql block under `docs/`
//! parses, so the written-down language and the parser cannot drift apart.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn grammar_examples_parse() {
    let grammar = std::fs::read_to_string(root().join("grammar/ecsql.ebnf")).unwrap();
    let start = grammar.find("(* EXAMPLES").expect("an EXAMPLES block");
    let block = &grammar[start..];
    let block = &block[block.find('\n').unwrap()..block.rfind("*)").unwrap()];
    let examples: Vec<&str> = block.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    assert!(examples.len() >= 30, "only {} examples", examples.len());
    for example in examples {
        if let Err(e) = ecsql::script::check_one(example) {
            panic!("grammar example does not parse: {example}\n{e}");
        }
    }
}

/// The ```sql blocks of a markdown file, with the line each starts on.
fn sql_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start().starts_with("```sql") => current = Some((n + 2, String::new())),
            Some(_) if line.trim_start().starts_with("```") => blocks.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn docs_sql_blocks_parse() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, sql) in sql_blocks(&text) {
            if let Err(e) = ecsql::script::check(&sql) {
                panic!(
                    "{}:{line}: a sql block does not parse: {e}\n{sql}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for (line, sql) in sql_blocks(&readme) {
        if let Err(e) = ecsql::script::check(&sql) {
            panic!("README.md:{line}: a sql block does not parse: {e}\n{sql}");
        }
        checked += 1;
    }
    assert!(checked > 0, "no sql blocks found in docs/ or README.md");
}
