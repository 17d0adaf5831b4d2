//! The printer held to the grammar: statements of every form `grammar/ecsql.ebnf` has,
//! drawn at random from its rules (names, texts and numbers from pools that include the
//! awkward ones: quotes, keywords' neighbours, numbers past INT's and FLOAT's ranges),
//! each one that parses printed and parsed again to the same tree (`reads_back`). The
//! test fails when a form of the grammar never parses, so it cannot pass by drawing
//! nothing. `ECSQL_PRINTED_CASES` sets how many statements are drawn (10,000 by default).

use std::collections::HashMap;

use super::{parse_one, reads_back, without_places};

/// A rule's right-hand side.
#[derive(Clone, Debug)]
enum Node {
    Term(String),
    Ref(String),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Opt(Box<Node>),
    Rep(Box<Node>),
}

/// The grammar's rules by name (ISO 14977: `,` sequence, `|` choice, `[ ]` optional,
/// `{ }` repeated, `( )` grouped, `(* *)` comments).
fn rules(text: &str) -> HashMap<String, Node> {
    // The examples at the end are statements in a comment, not rules.
    let text = text.split("(* EXAMPLES").next().unwrap_or(text);
    let mut tokens = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '(' && chars.get(i + 1) == Some(&'*') {
            let mut j = i + 2;
            while j + 1 < chars.len() && !(chars[j] == '*' && chars[j + 1] == ')') {
                j += 1;
            }
            i = j + 2;
        } else if c == '"' || c == '\'' {
            let mut j = i + 1;
            while chars[j] != c {
                j += 1;
            }
            tokens.push(format!("'{}", chars[i + 1..j].iter().collect::<String>()));
            i = j + 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            tokens.push(chars[i..j].iter().collect());
            i = j;
        } else if "=,;|[]{}()".contains(c) {
            tokens.push(c.to_string());
            i += 1;
        } else {
            i += 1;
        }
    }
    let mut rules = HashMap::new();
    let mut at = 0;
    while at < tokens.len() {
        let name = tokens[at].clone();
        assert_eq!(tokens[at + 1], "=", "rule {name}");
        at += 2;
        let node = alternatives(&tokens, &mut at);
        assert_eq!(tokens[at], ";", "rule {name} ends at {}", tokens[at]);
        at += 1;
        rules.insert(name, node);
    }
    rules
}

fn alternatives(tokens: &[String], at: &mut usize) -> Node {
    let mut alts = vec![sequence(tokens, at)];
    while tokens[*at] == "|" {
        *at += 1;
        alts.push(sequence(tokens, at));
    }
    if alts.len() == 1 {
        alts.remove(0)
    } else {
        Node::Alt(alts)
    }
}

fn sequence(tokens: &[String], at: &mut usize) -> Node {
    let mut items = vec![primary(tokens, at)];
    while tokens[*at] == "," {
        *at += 1;
        items.push(primary(tokens, at));
    }
    if items.len() == 1 {
        items.remove(0)
    } else {
        Node::Seq(items)
    }
}

fn primary(tokens: &[String], at: &mut usize) -> Node {
    let t = tokens[*at].clone();
    *at += 1;
    let group = |at: &mut usize, close: &str| {
        let inner = alternatives(tokens, at);
        assert_eq!(tokens[*at], close);
        *at += 1;
        inner
    };
    match t.as_str() {
        "[" => Node::Opt(Box::new(group(at, "]"))),
        "{" => Node::Rep(Box::new(group(at, "}"))),
        "(" => group(at, ")"),
        _ if t.starts_with('\'') => Node::Term(t[1..].to_owned()),
        _ => Node::Ref(t),
    }
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Draws sentences from the rules, choosing the cheapest ways once deep enough.
struct Drawer {
    rules: HashMap<String, Node>,
    /// Each rule's fewest terminals.
    cost: HashMap<String, usize>,
}

/// Words the leaves of the grammar draw from.
const NAMES: &[&str] = &[
    "Position", "x", "y", "Health", "hp", "a", "b", "T", "Hit", "v", "value", "parent",
];
const QUOTED: &[&str] = &[
    "\"Order\"",
    "\"two words\"",
    "\"say \"\"hi\"\"\"",
    "\"Ünïcode\"",
    "\"select\"",
];
const STRINGS: &[&str] = &[
    "'x'",
    "''",
    "'it''s'",
    "'line\nbreak'",
    "'ünï'",
    "'%a_'",
    "'16MB'",
];
const INTEGERS: &[&str] = &[
    "0",
    "1",
    "7",
    "42",
    "9223372036854775807",
    "9223372036854775808",
    "100000000000000000000",
];
const DECIMALS: &[&str] = &[
    "0.5",
    "1.0",
    "3.25",
    ".5",
    "1e309",
    "1e-320",
    "1e15",
    "2.5e-3",
    "123456789012345678.0",
    "0.0",
];
const PARAMETERS: &[&str] = &["?", "?1", "?2", "$1", ":dt", "$who"];
const VALUES: &[&str] = &["off", "1", "'16MB'", "normal", "full"];

impl Drawer {
    fn new(rules: HashMap<String, Node>) -> Drawer {
        let mut cost: HashMap<String, usize> = HashMap::new();
        // The leaves drawn from the pools above cost one.
        for leaf in [
            "identifier",
            "string",
            "integer",
            "decimal",
            "digits",
            "character",
            "value",
            "name",
            "parameter",
        ] {
            cost.insert(leaf.into(), 1);
        }
        loop {
            let mut changed = false;
            for (name, node) in &rules {
                if let Some(c) = Self::node_cost(&cost, node)
                    && cost.get(name).is_none_or(|&old| c < old)
                {
                    cost.insert(name.clone(), c);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Drawer { rules, cost }
    }

    fn node_cost(cost: &HashMap<String, usize>, node: &Node) -> Option<usize> {
        match node {
            Node::Term(_) => Some(1),
            Node::Ref(r) => cost.get(r).copied(),
            Node::Seq(items) => items.iter().map(|n| Self::node_cost(cost, n)).sum(),
            Node::Alt(alts) => alts.iter().filter_map(|n| Self::node_cost(cost, n)).min(),
            Node::Opt(_) | Node::Rep(_) => Some(0),
        }
    }

    fn draw(&self, node: &Node, depth: usize, rng: &mut Rng, out: &mut Vec<String>) {
        let deep = depth > 7;
        match node {
            Node::Term(t) => out.push(t.clone()),
            Node::Ref(r) => self.draw_rule(r, depth, rng, out),
            Node::Seq(items) => items.iter().for_each(|n| self.draw(n, depth, rng, out)),
            Node::Alt(alts) => {
                let alt = if deep {
                    let cheapest = alts
                        .iter()
                        .filter_map(|n| Self::node_cost(&self.cost, n))
                        .min()
                        .expect("a way out");
                    let cheap: Vec<&Node> = alts
                        .iter()
                        .filter(|n| Self::node_cost(&self.cost, n) == Some(cheapest))
                        .collect();
                    cheap[rng.below(cheap.len())]
                } else {
                    &alts[rng.below(alts.len())]
                };
                self.draw(alt, depth + 1, rng, out);
            }
            Node::Opt(inner) => {
                if !deep && rng.below(2) == 0 {
                    self.draw(inner, depth + 1, rng, out);
                }
            }
            Node::Rep(inner) => {
                let times = if deep { 0 } else { rng.below(3) };
                for _ in 0..times {
                    self.draw(inner, depth + 1, rng, out);
                }
            }
        }
    }

    fn draw_rule(&self, name: &str, depth: usize, rng: &mut Rng, out: &mut Vec<String>) {
        let leaf = match name {
            "identifier" => rng.pick(NAMES),
            "name" if rng.below(8) == 0 => rng.pick(QUOTED),
            "name" => rng.pick(NAMES),
            "string" => rng.pick(STRINGS),
            "integer" | "digits" => rng.pick(INTEGERS),
            "decimal" => rng.pick(DECIMALS),
            "parameter" => rng.pick(PARAMETERS),
            "value" => rng.pick(VALUES),
            "character" => "c",
            _ => {
                let node = self.rules.get(name).unwrap_or_else(|| panic!("no rule {name}"));
                return self.draw(node, depth + 1, rng, out);
            }
        };
        out.push(leaf.to_owned());
    }
}

#[test]
fn every_form_of_the_grammar_prints_back_to_itself() {
    let rules = rules(include_str!("../../grammar/ecsql.ebnf"));
    let Some(Node::Alt(forms)) = rules.get("statement").cloned() else {
        panic!("the grammar's statement is a choice of forms");
    };
    let drawer = Drawer::new(rules);
    let cases: usize = std::env::var("ECSQL_PRINTED_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let mut rng = Rng(0x5eed_0f9a_11e5);
    let mut parsed = vec![0usize; forms.len()];
    let mut failures = Vec::new();
    for case in 0..cases {
        let form = case % forms.len();
        let mut words = Vec::new();
        drawer.draw(&forms[form], 0, &mut rng, &mut words);
        let text = words.join(" ");
        let Ok(statement) = parse_one(&text) else {
            continue;
        };
        parsed[form] += 1;
        match reads_back(&statement) {
            Err(why) => failures.push(format!("{text}\n  {why}")),
            // The sqlparser way reads the printed text to the same tree too (the direct
            // parser, which `reads_back` tries first, takes most texts).
            Ok(printed) => {
                match super::parse_with_sqlparser(&printed, crate::location::Location::new(1, 1)) {
                    Ok(again)
                        if again.len() == 1
                            && without_places(&again[0].kind) == without_places(&statement.kind) => {}
                    Ok(again) => failures.push(format!("{text}\n  sqlparser reads `{printed}` as {again:?}")),
                    Err(e) => failures.push(format!("{text}\n  sqlparser does not read `{printed}`: {e}")),
                }
            }
        }
    }
    failures.sort();
    failures.dedup();
    assert!(
        failures.is_empty(),
        "{} statements do not print back to themselves:\n{}",
        failures.len(),
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    let never: Vec<String> = forms
        .iter()
        .zip(&parsed)
        .filter(|(_, n)| **n == 0)
        .map(|(f, _)| format!("{f:?}"))
        .collect();
    assert!(
        never.is_empty(),
        "forms never drawn as a statement that parses: {never:?}"
    );
    let total: usize = parsed.iter().sum();
    assert!(
        total * 4 >= cases,
        "only {total} of {cases} drawn statements parse: {parsed:?}"
    );
}
