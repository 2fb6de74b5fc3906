//! The operation log: the recent writes a pool node remembers (`#op VERSION KIND TOKEN COUNT`),
//! by which a writer whose reply was lost finds out whether its write applied.

/// How many recent operations a pool remembers by default, to resolve lost replies.
pub const DEFAULT_OP_LOG_LEN: usize = 64;

/// A random token naming one write, so its author can recognise it after a lost reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpToken(pub u64);

impl OpToken {
    /// A fresh random token.
    pub fn random() -> Self {
        Self(crate::random::random())
    }
}

/// 16 lowercase hex digits, as in `#op` lines and the names of claimed blocks and pushes.
impl std::fmt::Display for OpToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// What a logged write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// The category was created.
    Create,
    /// IDs were taken.
    Take,
    /// IDs were pushed back.
    Push,
    /// The ceiling was set or raised (by a keeper or an operator), or the pool repaired.
    Ceiling,
    /// Block allocation moved to a new generation (formats 3 and 4; `COUNT` is the IDs the
    /// closed generation spanned), or the pool was migrated to block allocation (`COUNT`: the
    /// free IDs that became fresh blocks).
    Blocks,
}

impl OpKind {
    /// The word used in `#op` lines.
    pub const fn as_str(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Take => "take",
            OpKind::Push => "push",
            OpKind::Ceiling => "ceiling",
            OpKind::Blocks => "blocks",
        }
    }

    /// The kind an `#op` line names.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "create" => Some(OpKind::Create),
            "take" => Some(OpKind::Take),
            "push" => Some(OpKind::Push),
            "ceiling" => Some(OpKind::Ceiling),
            "blocks" => Some(OpKind::Blocks),
            _ => None,
        }
    }
}

/// One entry of the operation log: the write that produced data version `version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// The pool version this write produced: the node's data version plus the pool's offset
    /// (`#offset`, 0 until the pool moved to a fresh node).
    pub version: i64,
    /// The writer's token.
    pub token: OpToken,
    /// What the write did.
    pub kind: OpKind,
    /// How many IDs it moved.
    pub count: u64,
}

/// The longest `#op` line: `#op <i64> <kind> <16 hex> <u64>\n`.
pub const MAX_OP_LINE_BYTES: usize = 4 + 20 + 7 + 17 + 21;

impl From<OpKind> for crate::error::WriteOp {
    fn from(kind: OpKind) -> Self {
        use crate::error::WriteOp;
        match kind {
            OpKind::Create => WriteOp::Create,
            OpKind::Take => WriteOp::Take,
            OpKind::Push => WriteOp::Push,
            OpKind::Ceiling => WriteOp::Ceiling,
            OpKind::Blocks => WriteOp::Blocks,
        }
    }
}
