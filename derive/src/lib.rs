//! `#[derive(Component)]` and `#[derive(FromRow)]` for ecsql (re-exported by ecsql with
//! its `derive` feature): a struct of named fields as a component, a unit struct as a
//! tag; a struct as what a query's row makes.
//!
//! Invariants:
//! - The code written names only `::ecsql` items, and each field's type is checked by
//!   `ecsql::FieldValue` (a field of another type is a compile error naming the types a
//!   field may have).
//! - Attributes: `#[ecsql(name = "…")]` and `#[ecsql(sparse)]` on the struct;
//!   `#[ecsql(name = "…")]` and `#[ecsql(default = "SQL")]` on a field. Anything else is a
//!   compile error at the attribute.

use proc_macro::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input};

/// A struct as an ecsql component: see `ecsql::Component`.
#[proc_macro_derive(Component, attributes(ecsql))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match component(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A struct whose rows a query's rows make: see `ecsql::FromRow`.
#[proc_macro_derive(FromRow, attributes(ecsql))]
pub fn derive_from_row(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match from_row(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn from_row(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            ident,
            "FromRow is for a struct: one field a column",
        ));
    };
    let build = match &data.fields {
        Fields::Named(named) => {
            let mut reads = Vec::new();
            for field in &named.named {
                let Some(field_ident) = &field.ident else {
                    return Err(syn::Error::new_spanned(field, "a field has a name"));
                };
                let ty = &field.ty;
                let f = said(&field.attrs, true)?;
                if f.default.is_some() {
                    return Err(syn::Error::new_spanned(
                        field,
                        "a row's field takes #[ecsql(name = \"…\")] only",
                    ));
                }
                let column = f.name.unwrap_or_else(|| field_ident.unraw().to_string());
                reads.push(quote!(#field_ident: row.get::<usize, #ty>(row.field_position(#column)?)?));
            }
            quote!(#ident { #(#reads),* })
        }
        Fields::Unnamed(unnamed) => {
            let reads = unnamed.unnamed.iter().enumerate().map(|(i, field)| {
                let ty = &field.ty;
                quote!(row.get::<usize, #ty>(#i)?)
            });
            quote!(#ident ( #(#reads),* ))
        }
        Fields::Unit => {
            return Err(syn::Error::new_spanned(
                ident,
                "FromRow makes a value of a row's columns: give the struct fields",
            ));
        }
    };
    Ok(quote! {
        impl #impl_generics ::ecsql::FromRow for #ident #type_generics #where_clause {
            fn from_row(row: &::ecsql::Row) -> ::ecsql::Result<Self> {
                ::core::result::Result::Ok(#build)
            }
        }
    })
}

/// What `#[ecsql(…)]` attributes say.
#[derive(Default)]
struct Said {
    name: Option<String>,
    default: Option<String>,
    sparse: bool,
}

fn said(attrs: &[syn::Attribute], on_field: bool) -> syn::Result<Said> {
    let mut out = Said::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("ecsql")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("name") {
                out.name = Some(meta.value()?.parse::<LitStr>()?.value());
                Ok(())
            } else if on_field && meta.path.is_ident("default") {
                out.default = Some(meta.value()?.parse::<LitStr>()?.value());
                Ok(())
            } else if !on_field && meta.path.is_ident("sparse") {
                out.sparse = true;
                Ok(())
            } else if on_field {
                Err(meta.error("a field takes #[ecsql(name = \"…\")] and #[ecsql(default = \"SQL\")]"))
            } else {
                Err(meta.error("a component takes #[ecsql(name = \"…\")] and #[ecsql(sparse)]"))
            }
        })?;
    }
    Ok(out)
}

fn component(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "a component is a type of its own: no generic parameters",
        ));
    }
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            ident,
            "a component is a struct of named fields, or a unit struct (a tag)",
        ));
    };
    let top = said(&input.attrs, false)?;
    let name = top.name.unwrap_or_else(|| ident.to_string());
    let sparse = top.sparse;
    let fields: Vec<&syn::Field> = match &data.fields {
        Fields::Named(named) => named.named.iter().collect(),
        Fields::Unit => Vec::new(),
        Fields::Unnamed(_) => {
            return Err(syn::Error::new_spanned(
                &data.fields,
                "a component's fields have names (they are its columns): struct P { x: f32 }",
            ));
        }
    };
    let mut specs = Vec::new();
    let mut values = Vec::new();
    let mut reads = Vec::new();
    let mut idents = Vec::new();
    let mut types = Vec::new();
    let mut vises = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let Some(field_ident) = &field.ident else {
            return Err(syn::Error::new_spanned(field, "a component's field has a name"));
        };
        let ty = &field.ty;
        let f = said(&field.attrs, true)?;
        let column = f.name.unwrap_or_else(|| field_ident.unraw().to_string());
        let default = match f.default {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        specs.push(quote!(::ecsql::FieldSpec::new::<#ty>(#column, #default)));
        values.push(quote!(::ecsql::ToParam::to_param(&self.#field_ident)));
        reads.push(quote!(#field_ident: row.get::<usize, #ty>(first + #i)?));
        idents.push(field_ident.clone());
        types.push(ty.clone());
        vises.push(field.vis.clone());
    }
    // A unit struct, or a struct of no fields (`struct Frozen {}`): a tag, built alike.
    let empty = match &data.fields {
        Fields::Unit => quote!(#ident),
        _ => quote!(#ident {}),
    };
    let build = if idents.is_empty() {
        empty.clone()
    } else {
        quote!(#ident { #(#reads),* })
    };
    let row_unused = if fields.is_empty() {
        quote!(let _ = (row, first);)
    } else {
        quote!()
    };
    let vis = &input.vis;
    let columns_ident = quote::format_ident!("{}Columns", ident);
    let columns_mut_ident = quote::format_ident!("{}ColumnsMut", ident);
    let columns_doc = format!(
        "The columns of [`{ident}`] in one table, to read: one slice per field, one value per row (a typed query's table view)."
    );
    let columns_mut_doc = format!(
        "The columns of [`{ident}`] in one table, to write: one slice per field, one value per row (a typed query's table view)."
    );
    let stored: Vec<proc_macro2::TokenStream> = types
        .iter()
        .map(|ty| quote!(<#ty as ::ecsql::FieldValue>::Stored))
        .collect();
    let marker = if fields.is_empty() {
        quote!(#[doc(hidden)] pub __rows: ::core::marker::PhantomData<&'a ()>,)
    } else {
        quote!()
    };
    let marker_init = if fields.is_empty() {
        quote!(__rows: ::core::marker::PhantomData,)
    } else {
        quote!()
    };
    let field_numbers: Vec<usize> = (0..idents.len()).collect();
    let value_of_row = if idents.is_empty() {
        empty.clone()
    } else {
        quote!(#ident { #(#idents: <#types as ::ecsql::FieldValue>::read_cell(columns, #field_numbers, row)?),* })
    };
    let unused = if fields.is_empty() {
        quote!(let _ = (&columns, row);)
    } else {
        quote!()
    };
    let unused_from = if fields.is_empty() {
        quote!(let _ = from;)
    } else {
        quote!()
    };
    // Locals the generated code binds, one per field, named apart from anything of the
    // user's (a field or a constant called `x` must not be matched as a pattern).
    let binds: Vec<syn::Ident> = (0..idents.len())
        .map(|i| quote::format_ident!("__ecsql_{}", i))
        .collect();
    // A component's rows go by as one iterator: the fields' slice iterators zipped
    // (`x.iter().zip(y.iter()).zip(z.iter())`), which the standard library steps with
    // one index for all of them, so a row costs one bound check, not one per field.
    let (rows_type, rows_mut_type, cells_type, rows_expr, rows_mut_expr, pattern) = if idents.is_empty() {
        (
            quote!(()),
            quote!(()),
            quote!(()),
            quote!(()),
            quote!(()),
            quote!(()),
        )
    } else {
        let s0 = &stored[0];
        let i0 = &idents[0];
        let mut rows_type = quote!(::core::slice::Iter<'a, #s0>);
        let mut rows_mut_type = quote!(::core::slice::IterMut<'a, #s0>);
        let mut cells_type = quote!(&'a mut #s0);
        let t0 = &types[0];
        let mut rows_expr = quote!(<#t0 as ::ecsql::FieldValue>::stored(columns.#i0).iter());
        let mut rows_mut_expr = quote!(<#t0 as ::ecsql::FieldValue>::stored_mut(columns.#i0).iter_mut());
        let b0 = &binds[0];
        let mut pattern = quote!(#b0);
        for (((ident, st), bind), ty) in idents.iter().zip(&stored).zip(&binds).zip(&types).skip(1) {
            rows_type = quote!(::core::iter::Zip<#rows_type, ::core::slice::Iter<'a, #st>>);
            rows_mut_type = quote!(::core::iter::Zip<#rows_mut_type, ::core::slice::IterMut<'a, #st>>);
            cells_type = quote!((#cells_type, &'a mut #st));
            rows_expr = quote!(#rows_expr.zip(<#ty as ::ecsql::FieldValue>::stored(columns.#ident).iter()));
            rows_mut_expr = quote!(#rows_mut_expr.zip(<#ty as ::ecsql::FieldValue>::stored_mut(columns.#ident).iter_mut()));
            pattern = quote!((#pattern, #bind));
        }
        (
            rows_type,
            rows_mut_type,
            cells_type,
            rows_expr,
            rows_mut_expr,
            pattern,
        )
    };
    // A batch being spawned: one Vec per field, nested in pairs as the rows are.
    let batch_type = match stored.split_first() {
        None => quote!(()),
        Some((s0, rest)) => {
            let mut t = quote!(::std::vec::Vec<#s0>);
            for st in rest {
                t = quote!((#t, ::std::vec::Vec<#st>));
            }
            t
        }
    };
    let (next_value_body, next_cells_body, take_body, put_body) = match idents.is_empty() {
        true => (
            quote!(let _ = (rows, skip); ::core::option::Option::Some(#empty)),
            quote!(let _ = (rows, skip); ::core::option::Option::Some(())),
            quote!(let _ = cells; #empty),
            quote!(let _ = cells;),
        ),
        false => (
            quote! {
                let #pattern = rows.nth(skip)?;
                ::core::option::Option::Some(#ident { #(#idents: <#types as ::ecsql::FieldValue>::read(#binds)),* })
            },
            quote!(rows.nth(skip)),
            quote! {
                let #pattern = cells;
                #ident { #(#idents: <#types as ::ecsql::FieldValue>::take(&mut **#binds)),* }
            },
            quote! {
                let #pattern = cells;
                #(<#types as ::ecsql::FieldValue>::put(&mut self.#idents, &mut **#binds);)*
            },
        ),
    };
    let columns_items = quote! {
        #[doc = #columns_doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #columns_ident<'a> {
            #(
                #[doc = concat!("`", stringify!(#idents), "` of each row.")]
                #vises #idents: <#types as ::ecsql::FieldValue>::View<'a>,
            )*
            #marker
        }

        #[doc = #columns_mut_doc]
        #[derive(Debug)]
        #vis struct #columns_mut_ident<'a> {
            #(
                #[doc = concat!("`", stringify!(#idents), "` of each row.")]
                #vises #idents: <#types as ::ecsql::FieldValue>::ViewMut<'a>,
            )*
            #marker
        }
    };
    let component_items = quote! {
        type Columns<'a> = #columns_ident<'a>;
        type ColumnsMut<'a> = #columns_mut_ident<'a>;
        fn columns<'a>(from: &mut ::ecsql::ColumnSource<'a>) -> ::core::option::Option<Self::Columns<'a>> {
            #unused_from
            ::core::option::Option::Some(#columns_ident {
                #(#idents: <#types as ::ecsql::FieldValue>::view(from.read::<#types>()?),)*
                #marker_init
            })
        }
        fn columns_mut<'a>(from: &mut ::ecsql::ColumnSource<'a>) -> ::core::option::Option<Self::ColumnsMut<'a>> {
            #unused_from
            ::core::option::Option::Some(#columns_mut_ident {
                #(#idents: <#types as ::ecsql::FieldValue>::view_mut(from.write::<#types>()?),)*
                #marker_init
            })
        }
        #[inline(always)]
        fn read_row(columns: &[::ecsql::ColumnCell], row: usize) -> ::core::result::Result<Self, usize> {
            #unused
            ::core::result::Result::Ok(#value_of_row)
        }
        type Rows<'a> = #rows_type;
        type RowsMut<'a> = #rows_mut_type;
        type Cells<'a> = #cells_type;
        #[inline(always)]
        fn rows(columns: Self::Columns<'_>) -> Self::Rows<'_> {
            #rows_expr
        }
        #[inline(always)]
        fn next_value(rows: &mut Self::Rows<'_>, skip: usize) -> ::core::option::Option<Self> {
            #next_value_body
        }
        #[inline(always)]
        fn rows_mut(columns: Self::ColumnsMut<'_>) -> Self::RowsMut<'_> {
            #rows_mut_expr
        }
        #[inline(always)]
        fn next_cells<'a>(rows: &mut Self::RowsMut<'a>, skip: usize) -> ::core::option::Option<Self::Cells<'a>> {
            #next_cells_body
        }
        #[inline(always)]
        fn take(cells: &mut Self::Cells<'_>) -> Self {
            #take_body
        }
        #[inline(always)]
        fn put(&mut self, cells: &mut Self::Cells<'_>) {
            #put_body
        }
        type Batch = #batch_type;
        fn reserve(batch: &mut Self::Batch, __ecsql_n: usize) {
            let #pattern = batch;
            #(#binds.reserve(__ecsql_n);)*
        }
        #[inline(always)]
        fn push(self, batch: &mut Self::Batch) {
            let #pattern = batch;
            #(#binds.push(<#types as ::ecsql::FieldValue>::into_stored(self.#idents));)*
        }
        fn finish(batch: Self::Batch, __ecsql_into: &mut ::std::vec::Vec<::ecsql::Column>) {
            let #pattern = batch;
            #(__ecsql_into.push(::ecsql::Column::from(#binds));)*
        }
    };
    // Each field's type checked first, at the field: the error a user reads first points
    // at the type that is no field type.
    let checks = types.iter().map(|ty| {
        quote::quote_spanned! {syn::spanned::Spanned::span(ty)=>
            let _: fn() = __ecsql_field_type::<#ty>;
        }
    });
    Ok(quote! {
        const _: () = {
            fn __ecsql_field_type<T: ::ecsql::FieldValue>() {}
            #[allow(dead_code)]
            fn __ecsql_check() {
                #(#checks)*
            }
        };

        #columns_items

        #[automatically_derived]
        #[allow(unused_variables, unused_mut, clippy::needless_lifetimes, clippy::unused_unit)]
        impl ::ecsql::Component for #ident {
            const NAME: &'static str = #name;
            const FIELDS: &'static [::ecsql::FieldSpec] = &[#(#specs),*];
            const SPARSE: bool = #sparse;
            fn values(&self) -> ::std::vec::Vec<::ecsql::Value> {
                ::std::vec![#(#values),*]
            }
            fn from_row(row: &::ecsql::Row, first: usize) -> ::ecsql::Result<Self> {
                #row_unused
                ::core::result::Result::Ok(#build)
            }
            #component_items
        }
    })
}
