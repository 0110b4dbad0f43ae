//! Agreement services in Surface B's document: the list, the read, the PUT (its body the
//! `Patch` type) and the true-up charge type relations.

use super::operations::{enumeration, filter, op, pid, write, List};
use crate::resources::agreement_services::{AgreementService, Patch};
use crate::resources::true_ups::{NewRelation, Relation};
use serde_json::{json, Value};
use shared::web::openapi::{string, Builder};
use shared::web::BILLING_PREFIX;

/// Agreement services, their PUT and their true-up relations.
pub(super) fn agreement_services(b: &mut Builder, e: &Value) {
    let p = |path: &str| format!("{BILLING_PREFIX}{path}");
    let service = b.schema::<AgreementService>();
    let filters = vec![
        filter("service_id", string()),
        filter(
            "service_resource_identifier",
            json!({ "type": "string", "maxLength": crate::resources::agreement_services::MAX_SRID_CHARS }),
        ),
        filter("child_service_resource_identifier", string()),
        filter("product_id", string()),
        filter("billing_account_id", string()),
        filter("account_num", string()),
        filter("external_account_num", string()),
        filter(
            "status",
            enumeration(shared::domain::agreements::AGREEMENT_SERVICE_STATUSES),
        ),
    ];
    List::new(filters).collection(
        b,
        &p("/agreement-services"),
        service.clone(),
        [
            ("listAgreementServices", "Agreement services"),
            ("getAgreementService", "One agreement service"),
        ],
        e,
    );
    let one_path = p("/agreement-services/{id}");
    let put = op(
        "billing",
        "updateAgreementService",
        "Partial update of an agreement service",
        e,
    )
    .body(b.schema::<Patch>(), true);
    let put =
        write(put, 200, service, &[pid("id")], true).errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&one_path, "put", put.build());

    let relations = p("/agreement-services/{agreement_service_id}/true-up-charge-type-relations");
    let relation = b.schema::<Relation>();
    let list = List {
        path_params: vec![pid("agreement_service_id")],
        extra_errors: &[404],
        ..List::new(vec![])
    };
    list.collection(
        b,
        &relations,
        relation.clone(),
        [
            ("listTrueUpRelations", "True-up charge type relations"),
            ("getTrueUpRelation", "One true-up charge type relation"),
        ],
        e,
    );
    let create = op(
        "billing",
        "createTrueUpRelation",
        "Create a true-up charge type relation",
        e,
    )
    .body(b.schema::<NewRelation>(), true);
    let create = write(
        create,
        201,
        relation.clone(),
        &[pid("agreement_service_id")],
        true,
    )
    .errors(&[400, 401, 404, 413, 415, 503], e);
    b.operation(&relations, "post", create.build());
    let one_relation = format!("{relations}/{{id}}");
    let ids = [pid("agreement_service_id"), pid("id")];
    let delete = op("billing", "deleteTrueUpRelation", "Delete a relation", e)
        .params(&ids)
        .answer_described(204, "Deleted; empty body", None)
        .errors(&[400, 401, 404, 503], e);
    b.operation(&one_relation, "delete", delete.build());
}
