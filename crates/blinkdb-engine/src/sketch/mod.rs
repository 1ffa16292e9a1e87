pub mod cms;
pub mod topk;
