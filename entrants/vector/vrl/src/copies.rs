//! The reads a plan's program must not make, because VRL copies far more
//! than they read.
//!
//! In VRL 0.34 (`Query::resolve` and `Variable::resolve`,
//! `src/compiler/expression/query.rs` and `variable.rs`) a path of the
//! event, `.f`, clones only the value at that path, but a path of a
//! variable, `x.f`, first clones the whole of `x` and then takes `f` from
//! the clone. A variable holding the event, or its array of readings, thus
//! costs a copy of the whole batch at each read of one of its fields, and
//! inside a closure at each read for each element: the program this rule
//! was written against read two fields of the batch per row, and cost some
//! ten times what reading each field once into a local costs.
//!
//! Two rules, each on VRL's own syntax tree:
//!
//! - the whole event, `.`, is never read (so never bound to a variable):
//!   a field is read from its own path;
//! - inside a closure, a path is read only of the closure's own variables
//!   (its parameters and what it assigns before the read): a field of an
//!   outer variable is read into a local before the closure, which then
//!   reads the local, a scalar, whole.

use std::collections::HashSet;
use std::fmt;

use vrl::diagnostic::Span;
use vrl::parser::ast::{
    Assignment, AssignmentTarget, Block, Container, Expr, FunctionCall, IfStatement, Node,
    Predicate, Query, QueryTarget, RootExpr, Unary,
};
use vrl::path::PathPrefix;

/// A read the rules refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Where the read starts in the source, from 1.
    pub line: usize,
    pub column: usize,
    /// The read as the source spells it, e.g. `batch.sensor`.
    pub read: String,
    pub why: Why,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The whole event is read.
    WholeEvent,
    /// A closure reads a path of a variable it did not bind.
    OuterPathInClosure,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Finding {
            line,
            column,
            read,
            why,
        } = self;
        match why {
            Why::WholeEvent => write!(
                f,
                "line {line}, column {column}: `{read}` reads the whole event, a copy of the \
                 batch that each later read of a field of it copies again; read each field \
                 from its own path"
            ),
            Why::OuterPathInClosure => write!(
                f,
                "line {line}, column {column}: `{read}` inside a closure copies the whole \
                 variable to read one field, once for each element; read the field into a \
                 local before the closure"
            ),
        }
    }
}

/// Every read of the source the rules refuse, in source order; an error
/// if VRL cannot parse it.
pub fn check(source: &str) -> Result<Vec<Finding>, String> {
    let program = vrl::parser::parse(source).map_err(|e| format!("VRL cannot parse it: {e}"))?;
    // The parser keeps going past an error, and hands it over in place of
    // the expression it could not parse.
    for root in &program.0 {
        if let RootExpr::Error(e) = root.inner() {
            return Err(format!("VRL cannot parse it: {e}"));
        }
    }
    let mut walk = Walk {
        source,
        closures: Vec::new(),
        found: Vec::new(),
    };
    for root in &program.0 {
        if let RootExpr::Expr(e) = root.inner() {
            walk.expr(e);
        }
    }
    walk.found
        .sort_by_key(|f| (f.line, f.column, f.read.clone()));
    Ok(walk.found)
}

struct Walk<'a> {
    source: &'a str,
    /// For each closure the walk is in, innermost last, the variables it
    /// has bound so far: its parameters, then what it assigns.
    closures: Vec<HashSet<String>>,
    found: Vec<Finding>,
}

impl Walk<'_> {
    fn expr(&mut self, e: &Node<Expr>) {
        match e.inner() {
            Expr::Literal(_) | Expr::Variable(_) => {}
            Expr::Container(c) => self.container(c.inner()),
            Expr::IfStatement(i) => self.if_statement(i.inner()),
            Expr::Op(op) => {
                self.expr(&op.0);
                self.expr(&op.2);
            }
            Expr::Assignment(a) => self.assignment(a.inner()),
            Expr::Query(q) => self.query(e.span(), q.inner()),
            Expr::FunctionCall(call) => self.call(call.inner()),
            Expr::Unary(u) => match u.inner() {
                Unary::Not(not) => {
                    let (_, operand) = not.inner().clone().take();
                    self.expr(&operand);
                }
            },
            Expr::Abort(a) => {
                if let Some(message) = &a.message {
                    self.expr(message);
                }
            }
            Expr::Return(r) => self.expr(&r.expr),
        }
    }

    fn block(&mut self, b: &Block) {
        for e in &b.0 {
            self.expr(e);
        }
    }

    fn container(&mut self, c: &Container) {
        match c {
            Container::Group(g) => self.expr(&g.inner().0),
            Container::Block(b) => self.block(b.inner()),
            // Their elements are private to the parser's crate; a copy
            // hands them over.
            Container::Array(a) => {
                for e in a.inner().clone() {
                    self.expr(&e);
                }
            }
            Container::Object(o) => {
                for (_, e) in o.inner().clone() {
                    self.expr(&e);
                }
            }
        }
    }

    fn if_statement(&mut self, i: &IfStatement) {
        match i.predicate.inner() {
            Predicate::One(e) => self.expr(e),
            Predicate::Many(es) => es.iter().for_each(|e| self.expr(e)),
        }
        self.block(i.if_node.inner());
        if let Some(b) = &i.else_node {
            self.block(b.inner());
        }
    }

    fn assignment(&mut self, a: &Assignment) {
        // The value is read before the target is bound: `x = x.f` in a
        // closure reads the outer x.
        let targets: Vec<&AssignmentTarget> = match a {
            Assignment::Single { target, expr, .. } => {
                self.expr(expr);
                vec![target.inner()]
            }
            Assignment::Infallible { ok, err, expr, .. } => {
                self.expr(expr);
                vec![ok.inner(), err.inner()]
            }
        };
        for t in targets {
            if let AssignmentTarget::Internal(ident, _) = t
                && let Some(bound) = self.closures.last_mut()
            {
                bound.insert(ident.to_string());
            }
        }
    }

    fn query(&mut self, span: Span, q: &Query) {
        let why = match q.target.inner() {
            QueryTarget::External(PathPrefix::Event) if q.path.is_root() => Some(Why::WholeEvent),
            QueryTarget::Internal(ident) if !q.path.is_root() => self
                .closures
                .last()
                .filter(|bound| !bound.contains(&**ident))
                .map(|_| Why::OuterPathInClosure),
            QueryTarget::External(_) | QueryTarget::Internal(_) => None,
            QueryTarget::FunctionCall(call) => {
                self.call(call);
                None
            }
            QueryTarget::Container(c) => {
                self.container(c);
                None
            }
        };
        if let Some(why) = why {
            let (line, column) = self.position(span.start());
            self.found.push(Finding {
                line,
                column,
                read: self.source[span.start()..span.end()].to_string(),
                why,
            });
        }
    }

    fn call(&mut self, call: &FunctionCall) {
        for arg in &call.arguments {
            self.expr(&arg.inner().expr);
        }
        if let Some(closure) = &call.closure {
            let closure = closure.inner();
            self.closures
                .push(closure.variables.iter().map(|v| v.to_string()).collect());
            self.block(closure.block.inner());
            self.closures.pop();
        }
    }

    /// The line and column, from 1, of a byte offset of the source.
    fn position(&self, offset: usize) -> (usize, usize) {
        let before = &self.source[..offset.min(self.source.len())];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rfind('\n')
            .map_or(before.len(), |nl| before.len() - nl - 1)
            + 1;
        (line, column)
    }
}
