//! Unit tests of the S-expression value, printer and parser, with proptest round trips.

use super::*;
use proptest::prelude::*;

fn parse(input: &str) -> Vec<Result<Sexp, ParseError>> {
    parse_all(input.as_bytes()).collect()
}

/// The single expression of `input`, which must parse cleanly.
fn only_ok(input: &str) -> Sexp {
    let mut results = parse(input);
    assert_eq!(results.len(), 1, "{results:?}");
    results.remove(0).unwrap()
}

fn err(pos: usize, kind: ParseErrorKind) -> Result<Sexp, ParseError> {
    Err(ParseError { pos, kind })
}

fn sx(text: &str) -> Sexp {
    text.parse().unwrap()
}

fn a(text: &str) -> Sexp {
    Sexp::atom(text)
}

fn print_all(exprs: &[Sexp]) -> String {
    let mut out = Vec::new();
    write_all(exprs, &mut out);
    String::from_utf8(out).unwrap()
}

const PERCEPTION: &str = "(time (now 1.20))(GS (t 1.20)(pm PlayOn))(HJ (n j1)(ax 12.5)(vx 0.3))";

#[test]
fn perception_message_parses_and_prints_back_identically() {
    let exprs: Vec<Sexp> = parse(PERCEPTION).into_iter().map(Result::unwrap).collect();
    assert_eq!(exprs.len(), 3);
    assert_eq!(
        exprs[0],
        Sexp::list([a("time"), Sexp::list([a("now"), a("1.20")])])
    );
    let now = exprs[0].find("now").unwrap().arg(0).unwrap();
    assert_eq!(now.as_f64(), Ok(1.2));
    assert_eq!(now.as_atom(), Some("1.20"));
    assert!(exprs[1].is("GS"));
    assert_eq!(exprs[1].find("pm").unwrap().arg(0), Some(&a("PlayOn")));
    let hj = &exprs[2];
    assert_eq!(hj.head(), Some("HJ"));
    assert_eq!(hj.find("n").unwrap().arg(0).unwrap().as_atom(), Some("j1"));
    assert_eq!(hj.find("ax").unwrap().arg(0).unwrap().as_f32(), Ok(12.5));
    assert_eq!(hj.find("vx").unwrap().arg(0).unwrap().as_f64(), Ok(0.3));
    assert_eq!(print_all(&exprs), PERCEPTION);
}

#[test]
fn init_request() {
    let init = only_ok("(init arm6 teamA 1)");
    assert_eq!(init.head(), Some("init"));
    assert_eq!(init.args(), &[a("arm6"), a("teamA"), a("1")]);
    assert_eq!(init.arg(2).unwrap().as_u64(), Ok(1));
    assert_eq!(init.arg(2).unwrap().as_i64(), Ok(1));
    assert_eq!(init.to_string(), "(init arm6 teamA 1)");
}

#[test]
fn effector_and_syn() {
    let exprs = parse("(shoulder_lift 30 0 20 1 0)(syn)");
    let effector = exprs[0].as_ref().unwrap();
    assert_eq!(effector.head(), Some("shoulder_lift"));
    let values: Vec<f64> = effector
        .args()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values, [30.0, 0.0, 20.0, 1.0, 0.0]);
    let syn = exprs[1].as_ref().unwrap();
    assert_eq!(syn, &Sexp::list([a("syn")]));
    assert!(syn.args().is_empty());
    assert_eq!(exprs.len(), 2);
}

#[test]
fn whitespace_between_and_inside_expressions() {
    assert_eq!(
        parse(" \t(a)\n\r\n(b)(c)  "),
        [Ok(sx("(a)")), Ok(sx("(b)")), Ok(sx("(c)"))]
    );
    assert_eq!(parse("(  a\tb\n( c ) )"), [Ok(sx("(a b (c))"))]);
    assert_eq!(parse("(a(b)c)"), [Ok(sx("(a (b) c)"))]);
    assert!(parse("").is_empty());
    assert!(parse(" \n\t ").is_empty());
    assert_eq!(parse("()"), [Ok(Sexp::List(vec![]))]);
}

#[test]
fn unclosed_list_reports_innermost_open_paren() {
    assert_eq!(parse("(a (b)"), [err(0, ParseErrorKind::Unclosed)]);
    assert_eq!(
        parse("(ok)(a (b"),
        [Ok(sx("(ok)")), err(7, ParseErrorKind::Unclosed)]
    );
}

#[test]
fn stray_close_paren() {
    assert_eq!(
        parse(")("),
        [
            err(0, ParseErrorKind::UnexpectedClose),
            err(1, ParseErrorKind::Unclosed)
        ]
    );
    assert_eq!(
        parse("(a))(b)"),
        [
            Ok(sx("(a)")),
            err(3, ParseErrorKind::UnexpectedClose),
            Ok(sx("(b)"))
        ]
    );
}

#[test]
fn top_level_atoms_are_one_error_per_run() {
    assert_eq!(
        parse("foo bar (a) \"x (y\" ) (b)"),
        [
            err(0, ParseErrorKind::ExpectedOpen),
            Ok(sx("(a)")),
            err(12, ParseErrorKind::ExpectedOpen),
            Ok(sx("(b)"))
        ]
    );
}

#[test]
fn error_inside_list_skips_the_whole_top_level_expression() {
    // The nested (c) and the ")" inside quotes must not surface or close anything.
    assert_eq!(
        parse(r#"(a "bad\q" (c ")") x)(d)"#),
        [err(7, ParseErrorKind::BadEscape), Ok(sx("(d)"))]
    );
}

#[test]
fn quoted_atoms() {
    let text = r#"(say "hello world" "a\"b\\c" "" "x\ny\tz\r" "(p)" plain\slash)"#;
    let say = only_ok(text);
    assert_eq!(
        say.args(),
        &[
            a("hello world"),
            a("a\"b\\c"),
            a(""),
            a("x\ny\tz\r"),
            a("(p)"),
            a("plain\\slash")
        ]
    );
    assert_eq!(say.to_string(), text);
    // A quote ends a bare atom and a quoted one needs no space after it.
    assert_eq!(
        parse(r#"(a"b c"d)"#),
        [Ok(Sexp::list([a("a"), a("b c"), a("d")]))]
    );
    assert_eq!(Sexp::atom("x").to_string(), "x");
    assert_eq!(Sexp::atom("").to_string(), "\"\"");
}

#[test]
fn string_errors() {
    assert_eq!(
        parse(r#"(a "bc"#),
        [err(3, ParseErrorKind::UnterminatedString)]
    );
    assert_eq!(
        parse("(a \"bc\\"),
        [err(3, ParseErrorKind::UnterminatedString)]
    );
    assert_eq!(
        parse(r#"("ok\x")(b)"#),
        [err(4, ParseErrorKind::BadEscape), Ok(sx("(b)"))]
    );
}

#[test]
fn invalid_utf8_is_an_error_with_its_position() {
    let got: Vec<_> = parse_all(b"(a \xff b)(c)").collect();
    assert_eq!(got, [err(3, ParseErrorKind::InvalidUtf8), Ok(sx("(c)"))]);
    let got: Vec<_> = parse_all(b"(\"\\n\xc3\")(c)").collect();
    assert_eq!(got, [err(4, ParseErrorKind::InvalidUtf8), Ok(sx("(c)"))]);
    let got: Vec<_> = parse_all("(é \"ü\")".as_bytes()).collect();
    assert_eq!(got, [Ok(Sexp::list([a("é"), a("ü")]))]);
}

fn nested(depth: usize) -> String {
    format!("{}x{}", "(".repeat(depth), ")".repeat(depth))
}

#[test]
fn nesting_limit() {
    assert!(parse(&nested(MAX_DEPTH))[0].is_ok());
    let too_deep = format!("{}(ok)", nested(MAX_DEPTH + 1));
    assert_eq!(
        parse(&too_deep),
        [err(MAX_DEPTH, ParseErrorKind::TooDeep), Ok(sx("(ok)"))]
    );
    let shallow: Vec<_> = parse_all(b"((a))(b)").with_max_depth(1).collect();
    assert_eq!(shallow, [err(1, ParseErrorKind::TooDeep), Ok(sx("(b)"))]);
}

#[test]
fn hostile_nesting_does_not_overflow_the_stack() {
    let depth = 1_000_000;
    let hostile = format!("{}(after)", nested(depth));
    assert_eq!(
        parse(&hostile),
        [err(MAX_DEPTH, ParseErrorKind::TooDeep), Ok(sx("(after)"))]
    );
    let unclosed = "(".repeat(depth);
    assert_eq!(parse(&unclosed), [err(MAX_DEPTH, ParseErrorKind::TooDeep)]);
}

#[test]
fn errors_read_well() {
    let error = parse("(a))")[1].clone().unwrap_err();
    assert_eq!(error.to_string(), "unexpected ')' at byte 3");
    let error = parse("(a (b")[0].clone().unwrap_err();
    assert_eq!(error.to_string(), "unclosed '(' at byte 3");
}

#[test]
fn printer_spacing() {
    assert_eq!(
        Sexp::list([a("a"), a("b"), Sexp::list([a("c"), a("d")])]).to_string(),
        "(a b (c d))"
    );
    assert_eq!(sx("(a (b) c)").to_string(), "(a (b) c)");
    assert_eq!(sx("((a) (b) c)").to_string(), "((a)(b) c)");
    assert_eq!(sx("( )").to_string(), "()");
}

#[test]
fn write_all_appends_without_separators() {
    let mut out = b"prefix:".to_vec();
    write_all(&[sx("(a b)"), sx("(c)"), sx("(d (e))")], &mut out);
    assert_eq!(out, b"prefix:(a b)(c)(d (e))");
}

#[test]
fn numbers_print_compactly() {
    let cases: [(f64, &str); 9] = [
        (12.5, "12.5"),
        (-0.001, "-0.001"),
        (3.0, "3"),
        (0.3, "0.3"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e20, "1e20"),
        (-1.5e-7, "-1.5e-7"),
        (123456.0, "123456"),
    ];
    for (value, text) in cases {
        assert_eq!(Sexp::try_from(value), Ok(a(text)), "{value}");
    }
    assert_eq!(Sexp::try_from(0.1f32), Ok(a("0.1")));
    assert_eq!(Sexp::try_from(-2.5f32), Ok(a("-2.5")));
    assert_eq!(Sexp::from(-7i32), a("-7"));
    assert_eq!(Sexp::from(42usize), a("42"));
    assert_eq!(Sexp::fixed(1.2, 2), Ok(a("1.20")));
    assert_eq!(Sexp::fixed(-0.001, 2), Ok(a("0.00")));
    assert_eq!(Sexp::fixed(-1.005, 1), Ok(a("-1.0")));
}

#[test]
fn non_finite_numbers_are_refused() {
    assert!(Sexp::try_from(f64::NAN).is_err());
    assert_eq!(
        Sexp::try_from(f64::INFINITY),
        Err(NonFiniteNumber(f64::INFINITY))
    );
    assert!(Sexp::try_from(f32::NEG_INFINITY).is_err());
    assert!(Sexp::fixed(f64::NAN, 2).is_err());
}

#[test]
fn number_accessors_reject_bad_atoms() {
    assert_eq!(sx("(a)").as_f64(), Err(ValueError::NotAtom));
    assert_eq!(
        a("abc").as_f64(),
        Err(ValueError::Invalid {
            text: "abc".into(),
            expected: "number"
        })
    );
    for text in ["nan", "NaN", "inf", "-infinity"] {
        assert_eq!(
            a(text).as_f64(),
            Err(ValueError::NonFinite { text: text.into() })
        );
    }
    assert!(matches!(
        a("1e39").as_f32(),
        Err(ValueError::NonFinite { .. })
    ));
    assert!(a("1e39").as_f64().is_ok());
    assert!(a("1.5").as_i64().is_err());
    assert!(a("-1").as_u64().is_err());
}

#[test]
fn lookup_helpers() {
    let pos = sx("(pos (n ee)(p 1 2 3)(p 4))");
    assert_eq!(pos.find("p"), Some(&sx("(p 1 2 3)")));
    assert_eq!(pos.find_all("p").count(), 2);
    assert_eq!(pos.find("q"), None);
    assert_eq!(pos.find("pos"), None, "only children are searched");
    assert_eq!(a("p").find("p"), None);
    assert_eq!(a("p").head(), None);
    assert_eq!(sx("((x) y)").head(), None);
    assert_eq!(pos.as_atom(), None);
    assert_eq!(a("x").as_list(), None);
    assert_eq!(pos.as_list().map(<[Sexp]>::len), Some(4));
}

#[test]
fn from_str_takes_exactly_one_expression() {
    assert_eq!("(a b)".parse(), Ok(Sexp::list([a("a"), a("b")])));
    assert_eq!(" atom ".parse(), Ok(a("atom")));
    assert_eq!(
        "  ".parse::<Sexp>(),
        Err(ParseError {
            pos: 2,
            kind: ParseErrorKind::Empty
        })
    );
    assert_eq!(
        "(a) (b)".parse::<Sexp>(),
        Err(ParseError {
            pos: 4,
            kind: ParseErrorKind::Trailing
        })
    );
    assert_eq!(
        ")".parse::<Sexp>().map_err(|e| e.kind),
        Err(ParseErrorKind::UnexpectedClose)
    );
}

/// Atoms from a charset that exercises quoting: whitespace, parens, quotes, backslashes,
/// non-ASCII letters and emoji.
fn atom_strategy() -> impl Strategy<Value = Sexp> {
    let chars = prop::sample::select(vec![
        'a', 'Z', '0', '9', '.', '-', '_', ' ', '\t', '\n', '\r', '(', ')', '"', '\\', 'é', 'ß',
        '✓', '🙂', '\u{b}', '\u{0}',
    ]);
    prop::collection::vec(chars, 0..8).prop_map(|cs| Sexp::Atom(cs.into_iter().collect()))
}

fn tree_strategy() -> impl Strategy<Value = Sexp> {
    atom_strategy().prop_recursive(6, 64, 6, |inner| {
        prop::collection::vec(inner, 0..6).prop_map(Sexp::List)
    })
}

fn list_strategy() -> impl Strategy<Value = Sexp> {
    prop::collection::vec(tree_strategy(), 0..6).prop_map(Sexp::List)
}

/// Bytes biased towards the grammar's special characters, so random input gets past the
/// first paren far more often than uniform bytes would.
fn grammar_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        prop::sample::select(b"((()))\"\\ \tab1.ne".to_vec()),
        any::<u8>(),
    ];
    prop::collection::vec(byte, 0..256)
}

fn check_parse_invariants(input: &[u8]) {
    for item in parse_all(input) {
        match item {
            Err(error) => assert!(error.pos <= input.len()),
            // Whatever the parser accepts must survive a print/parse round trip.
            Ok(expr) => {
                let printed = expr.to_string();
                let again: Vec<_> = parse_all(printed.as_bytes()).collect();
                assert_eq!(again, [Ok(expr)]);
            }
        }
    }
}

proptest! {
    #[test]
    fn parser_never_panics_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..512)) {
        check_parse_invariants(&input);
    }

    #[test]
    fn parser_never_panics_on_grammar_like_bytes(input in grammar_bytes()) {
        check_parse_invariants(&input);
    }

    #[test]
    fn print_then_parse_round_trips(exprs in prop::collection::vec(list_strategy(), 0..5)) {
        let mut out = Vec::new();
        write_all(&exprs, &mut out);
        let parsed: Vec<_> = parse_all(&out).collect();
        let expected: Vec<_> = exprs.into_iter().map(Ok).collect();
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn display_then_from_str_round_trips(expr in tree_strategy()) {
        prop_assert_eq!(expr.to_string().parse::<Sexp>(), Ok(expr));
    }

    #[test]
    fn finite_f64_round_trips_through_its_atom(value in any::<f64>().prop_filter("finite", |v| v.is_finite())) {
        let atom = Sexp::try_from(value).unwrap();
        let back = atom.as_f64().unwrap();
        // -0 prints as 0 on purpose.
        prop_assert_eq!(back.to_bits(), if value == 0.0 { 0 } else { value.to_bits() });
    }

    #[test]
    fn finite_f32_round_trips_through_its_atom(value in any::<f32>().prop_filter("finite", |v| v.is_finite())) {
        let atom = Sexp::try_from(value).unwrap();
        let back = atom.as_f32().unwrap();
        prop_assert_eq!(back.to_bits(), if value == 0.0 { 0 } else { value.to_bits() });
    }
}

#[test]
fn a_node_budget_ends_the_payload_with_one_error() {
    let input = "(x)".repeat(1000);
    let results: Vec<_> = parse_all(input.as_bytes()).with_max_nodes(10).collect();
    // Five `(x)` cost two nodes each; the sixth list overruns and nothing after it is read.
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 5);
    assert_eq!(results.len(), 6);
    let error = results[5].as_ref().unwrap_err();
    assert_eq!(error.kind, ParseErrorKind::TooManyNodes);
    assert_eq!(error.pos, 15);
    // One long list is held to the same budget.
    let long = format!("(a{})", " x".repeat(100));
    let results: Vec<_> = parse_all(long.as_bytes()).with_max_nodes(50).collect();
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].as_ref().unwrap_err().kind,
        ParseErrorKind::TooManyNodes
    );
}
